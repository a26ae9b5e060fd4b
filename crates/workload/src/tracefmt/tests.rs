use super::*;

fn read(text: &str, format: Option<TraceFormat>) -> Result<Vec<TraceRecord>, TraceError> {
    let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
    TraceReader::new("t", input, format)?.collect()
}

fn rec(arrival_ns: u64, op: OpKind, offset: u64, len: u64, device: u32, line: u64) -> TraceRecord {
    TraceRecord {
        arrival_ns,
        op,
        offset,
        len,
        device,
        completion_ns: None,
        flags: 0,
        line,
    }
}

#[test]
fn iolog_v2_with_waits_and_files() {
    let t = "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 4096 8192\n\
             /dev/sdb wait 1500\n/dev/sdb read 0 4096\n/tmp/f add\n/tmp/f trim 512 512\n\
             /dev/sdb sync 0 0\n/dev/sdb close\n";
    let r = read(t, None).unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0], rec(0, OpKind::Write, 4096, 8192, 0, 4));
    assert_eq!(r[1], rec(1_500_000, OpKind::Read, 0, 4096, 0, 6));
    assert_eq!(r[2], rec(1_500_000, OpKind::Discard, 512, 512, 1, 8));
    assert_eq!(r[3].op, OpKind::Flush);
    assert_eq!(r[3].flags, flags::SYNC);
}

#[test]
fn iolog_v3_times_are_microseconds() {
    let t = "fio version 3 iolog\n0 /dev/nvme0n1 add\n1 /dev/nvme0n1 open\n\
             10 /dev/nvme0n1 read 0 4096\n2510 /dev/nvme0n1 write 8192 4096\n";
    let input: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(t.as_bytes().to_vec()));
    let rd = TraceReader::new("t", input, None).unwrap();
    assert_eq!(rd.format(), TraceFormat::IologV3);
    let r: Vec<_> = rd.collect::<Result<_, _>>().unwrap();
    // Relative to the first request.
    assert_eq!(r[0].arrival_ns, 0);
    assert_eq!(r[1].arrival_ns, 2_500_000);
    let e = read("fio version 3 iolog\n5 f wait 100\n", None).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn blkparse_arrival_at_q_completion_at_c() {
    let t = "  8,0    1        1     0.000000000   123  Q   W 1234 + 8 [fio]\n\
             \x20 8,0    1        2     0.000001000   123  G   W 1234 + 8 [fio]\n\
             \x20 8,0    1        3     0.000002000   123  D   W 1234 + 8 [fio]\n\
             \x20 8,0    0        4     0.000010000   124  Q  RS 99 + 16 [postgres]\n\
             \x20 8,0    1        5     0.000100000     0  C   W 1234 + 8 [0]\n\
             \x20 8,0    0        6     0.000200000   124  Q  FN [kworker]\n\
             \x20 8,0    0        7     0.000300000   124  Q FWFS 50 + 8 [jbd2]\n\
             \x20 8,0    0        8     0.000400000   124  Q   D 4096 + 2048 [fstrim]\n\
             CPU0 (8,0):\n Reads Queued:           1,        8KiB\n";
    let r = read(t, None).unwrap();
    assert_eq!(r.len(), 5);
    assert_eq!(r[0].op, OpKind::Write);
    assert_eq!((r[0].offset, r[0].len), (1234 * 512, 8 * 512));
    assert_eq!(r[0].completion_ns, Some(100_000));
    assert_eq!(r[1].op, OpKind::Read);
    assert_eq!(r[1].flags, flags::SYNC);
    assert_eq!(r[1].arrival_ns, 10_000);
    assert_eq!(r[1].completion_ns, None);
    assert_eq!(r[2].op, OpKind::Flush);
    assert_eq!(r[3].op, OpKind::Write);
    assert_eq!(r[3].flags, flags::PREFLUSH | flags::FUA | flags::SYNC);
    assert_eq!(r[4].op, OpKind::Discard);
    assert_eq!(r[4].len, 2048 * 512);
    assert_eq!(r[0].device, 8 << 20);
}

#[test]
fn blkparse_without_q_arrives_at_d() {
    let t = "8,16 0 1 1.5 0 D R 8 + 8 [a]\n8,16 0 2 1.6 0 C R 8 + 8 [0]\n8,16 0 3 2.5 0 D W 16 + 8 [a]\n";
    let r = read(t, Some(TraceFormat::Blkparse)).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].arrival_ns, 0);
    assert_eq!(r[0].completion_ns, Some(100_000_000));
    assert_eq!(r[1].arrival_ns, 1_000_000_000);
}

#[test]
fn msr_shares_the_closed_loop_parser() {
    let t = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
             128166372003061629,usr,0,Read,3154152960,4096,1331\n\
             128166372016382155,usr,1,Write,3154152960,8192,1020\n";
    let r = read(t, None).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].completion_ns, Some(133_100));
    assert_eq!(
        r[1].arrival_ns,
        (128166372016382155 - 128166372003061629) * 100
    );
    assert_eq!(r[1].device, 1);
    assert_eq!(r[1].op, OpKind::Write);
    let closed = crate::Trace::parse_msr_csv("t", t).unwrap();
    assert_eq!(closed.ios.len(), r.len());
}

#[test]
fn snia_and_mqsim() {
    let tencent = "1538323200,1024,8,0,1063\n1538323201,2048,16,1,1063\n";
    let r = read(tencent, None).unwrap();
    assert_eq!(
        r[1],
        rec(1_000_000_000, OpKind::Write, 2048 * 512, 16 * 512, 1063, 2)
    );
    let fiu = "89966527403848 4930 syslogd 37383904 8 W 6 0 9f3d2b7d2fa1e4a0\n\
               89966527503848 4931 nfsd 100 8 R 6 1 00ff\n";
    let r = read(fiu, None).unwrap();
    assert_eq!(
        r[0],
        rec(0, OpKind::Write, 37383904 * 512, 4096, 6 << 20, 1)
    );
    assert_eq!(r[1].arrival_ns, 100_000);
    let mq = "1000 0 64 8 1\n5000 0 128 16 0\n";
    let r = read(mq, None).unwrap();
    assert_eq!(r[0], rec(0, OpKind::Read, 64 * 512, 4096, 0, 1));
    assert_eq!(r[1], rec(4000, OpKind::Write, 128 * 512, 8192, 0, 2));
}

#[test]
fn detection() {
    let d = |s: &str| detect(&s.lines().map(String::from).collect::<Vec<_>>());
    assert_eq!(d("fio version 2 iolog\n"), Some(TraceFormat::IologV2));
    assert_eq!(
        d("# c\n\n8,0 1 1 0.1 1 Q W 1 + 8 [x]"),
        Some(TraceFormat::Blkparse)
    );
    assert_eq!(d("1,h,0,Read,0,4096,1"), Some(TraceFormat::Msr));
    assert_eq!(
        d("Timestamp,Offset,Size,IOType,VolumeID"),
        Some(TraceFormat::SniaTencent)
    );
    assert_eq!(d("1 0 8 8 1"), Some(TraceFormat::Mqsim));
    assert_eq!(d("hello world"), None);
    let e = read("hello world\n", None).unwrap_err();
    assert!(e.to_string().contains("--trace-format"), "{e}");
}

#[test]
fn errors_name_the_file_and_line() {
    let cases: &[(&str, Option<TraceFormat>, u64)] = &[
        ("fio version 2 iolog\nf add\nf read 0\n", None, 3),
        ("fio version 2 iolog\nf add\nf frob 0 1\n", None, 3),
        ("8,0 1 1 0.0 1 Q W 8 + 8 [a]\n8,0 1 2 0.", None, 2),
        (
            "8,0 1 1 0.0 1 Q W 8 + 8 [a]\n8,0 1 2 x 1 Q W 8 + 8 [a]\n",
            None,
            2,
        ),
        ("1,h,0,Read,0,4096,1\n2,h,0,Wri", None, 2),
        ("1 0 8 8 1\n2 0 8 8\n", None, 2),
        ("1 0 8 8 1\n2 0 8 8 7\n", None, 2),
        ("1,8,8,0,1\n2,8,8,0\n", None, 2),
        ("1 2 p 8 8 R 6 0 x\n1 2 p 8 8 Q 6 0 x\n", None, 2),
        ("1 0 8 0 1\n", None, 1),
        ("\u{1}\u{2}\u{3}", Some(TraceFormat::Mqsim), 1),
    ];
    for (text, f, line) in cases {
        let e = read(text, *f).unwrap_err();
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(
            e.to_string().starts_with(&format!("trace t line {line}: ")),
            "{e}"
        );
    }
    let e = read("", None).unwrap_err();
    assert_eq!(e.to_string(), "trace t: empty trace");
    let e = read("fio version 3 iolog\n", None).unwrap_err();
    assert!(e.to_string().contains("no I/O"), "{e}");
    let e = TraceReader::open(Path::new("/nonexistent/x.log"), None)
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot open"), "{e}");
}

#[test]
fn a_line_without_end_is_bounded() {
    let big = "1".repeat(lines::MAX_LINE + 10);
    let e = read(&big, Some(TraceFormat::Mqsim)).unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
}

#[test]
fn secs_parse_exactly() {
    assert_eq!(secs_to_ns("0.000000001", "t"), Ok(1));
    assert_eq!(secs_to_ns("12.5", "t"), Ok(12_500_000_000));
    assert_eq!(secs_to_ns("3", "t"), Ok(3_000_000_000));
    assert!(secs_to_ns(".", "t").is_err());
    assert!(secs_to_ns("1.2.3", "t").is_err());
    assert!(secs_to_ns("99999999999999999999", "t").is_err());
}

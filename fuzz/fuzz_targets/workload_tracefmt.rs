//! The streaming trace readers (every format, forced and auto-detected).
#![no_main]
use workload::tracefmt::{TraceFormat, TraceReader};
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for f in [
        None,
        Some(TraceFormat::IologV3),
        Some(TraceFormat::Blkparse),
        Some(TraceFormat::Msr),
        Some(TraceFormat::SniaTencent),
        Some(TraceFormat::SniaFiu),
        Some(TraceFormat::Mqsim),
    ] {
        let input: Box<dyn std::io::BufRead + Send> = Box::new(std::io::Cursor::new(data.to_vec()));
        if let Ok(r) = TraceReader::new("fuzz", input, f) {
            for rec in r {
                if rec.is_err() {
                    break;
                }
            }
        }
    }
});

//! A card's placement policy ([`ftl::PlacementSpec`]) given in card terms,
//! turned into each member's: `--stream` ranges are card bytes, and a
//! card striped over several members (RAID 0 in chunks) gives every member
//! its share of each range.

use crate::DeviceError;
use ftl::PlacementSpec;

/// The members' placement for card placement `spec`, whose stream ranges
/// are card bytes `start..end`. With `members` members striped in chunks
/// of `chunk_sectors`, a range must start and end on a stripe (`members ×
/// chunk`): then card sectors `a..b` are member sectors `a/n..b/n` on
/// every member. `capacity_sectors` is the card's, `sector` its size.
pub fn member_placement(
    spec: &PlacementSpec,
    sector: u64,
    members: u64,
    chunk_sectors: u64,
    capacity_sectors: u64,
) -> Result<PlacementSpec, DeviceError> {
    let PlacementSpec::Streams(ranges) = spec else {
        return Ok(spec.clone());
    };
    let err = |m: String| DeviceError::Config(format!("--stream: {m}"));
    let stripe = if members > 1 {
        members * chunk_sectors
    } else {
        1
    };
    let mut out = Vec::with_capacity(ranges.len());
    for &(a, b) in ranges {
        if a >= b {
            return Err(err(format!("range {a}-{b} is empty")));
        }
        let cap = capacity_sectors * sector;
        if b > cap {
            return Err(err(format!(
                "range {a}-{b} ends beyond the card's {cap} bytes"
            )));
        }
        for x in [a, b] {
            if !x.is_multiple_of(sector) || !(x / sector).is_multiple_of(stripe) {
                return Err(err(format!(
                    "boundary {x} is not a multiple of the {} byte stripe ({members} member(s))",
                    stripe * sector
                )));
            }
        }
        let n = if members > 1 { members } else { 1 };
        out.push((a / sector / n, b / sector / n));
    }
    let member = PlacementSpec::Streams(out);
    member
        .validate(capacity_sectors.div_ceil(members.max(1)))
        .map_err(|m| err(m.replace(" (sectors)", " (member sectors)")))?;
    Ok(member)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_over_members() {
        let card = PlacementSpec::Streams(vec![(0, 4 << 20), (8 << 20, 16 << 20)]);
        // Two members, 512 KiB chunks of 4 KiB sectors: a 1 MiB stripe.
        let m = member_placement(&card, 4096, 2, 128, 8192).unwrap();
        assert_eq!(m, PlacementSpec::Streams(vec![(0, 512), (1024, 2048)]));
    }

    #[test]
    fn bad_ranges_are_one_line() {
        let cases = [
            (vec![(0, 3 << 19)], "stripe"),
            (vec![(0, 64 << 20)], "beyond"),
            (vec![(0, 4 << 20), (2 << 20, 8 << 20)], "overlap"),
            (vec![(4 << 20, 4 << 20)], "empty"),
        ];
        for (r, want) in cases {
            let e = member_placement(&PlacementSpec::Streams(r), 4096, 2, 128, 8192)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
    }
}

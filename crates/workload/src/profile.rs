use crate::spec::{BlockSizes, Distribution, Pattern, WorkloadSpec};

/// A named workload from the reviews (SYSTEM.md §3).
#[derive(Copy, Clone, Debug)]
pub struct Profile {
    pub name: &'static str,
    pub description: &'static str,
    pattern: Pattern,
    read_percent: u32,
    bssplit: &'static str,
}

pub static PROFILES: &[Profile] = &[
    Profile {
        name: "4k-randread",
        description: "4 KiB random, 100% read",
        pattern: Pattern::Random,
        read_percent: 100,
        bssplit: "4k",
    },
    Profile {
        name: "4k-randwrite",
        description: "4 KiB random, 100% write",
        pattern: Pattern::Random,
        read_percent: 0,
        bssplit: "4k",
    },
    Profile {
        name: "8k-7030",
        description: "8 KiB random, 70% read / 30% write",
        pattern: Pattern::Random,
        read_percent: 70,
        bssplit: "8k",
    },
    Profile {
        name: "fileserver",
        description: "File Server: random, 80% read, 512B-64K mix",
        pattern: Pattern::Random,
        read_percent: 80,
        bssplit: "512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10",
    },
    Profile {
        name: "webserver",
        description: "Web Server: random, 100% read, 512B-512K mix",
        pattern: Pattern::Random,
        read_percent: 100,
        bssplit: "512/22:1k/15:2k/8:4k/23:8k/15:16k/2:32k/6:64k/7:128k/1:512k/1",
    },
    Profile {
        name: "seq-2m-read",
        description: "2 MiB sequential read",
        pattern: Pattern::Sequential,
        read_percent: 100,
        bssplit: "2m",
    },
    Profile {
        name: "seq-2m-write",
        description: "2 MiB sequential write",
        pattern: Pattern::Sequential,
        read_percent: 0,
        bssplit: "2m",
    },
    Profile {
        name: "2m-randread",
        description: "2 MiB random read",
        pattern: Pattern::Random,
        read_percent: 100,
        bssplit: "2m",
    },
    Profile {
        name: "2m-randwrite",
        description: "2 MiB random write",
        pattern: Pattern::Random,
        read_percent: 0,
        bssplit: "2m",
    },
];

impl Profile {
    pub fn by_name(name: &str) -> Option<&'static Profile> {
        PROFILES.iter().find(|p| p.name == name)
    }

    pub fn all() -> &'static [Profile] {
        PROFILES
    }

    pub fn spec(&self) -> WorkloadSpec {
        let block_sizes =
            match BlockSizes::parse_split(self.bssplit).expect("profile table is valid") {
                BlockSizes::Split(v) if v.len() == 1 => BlockSizes::Fixed(v[0].0),
                b => b,
            };
        WorkloadSpec {
            pattern: self.pattern,
            read_fraction: self.read_percent as f64 / 100.0,
            block_sizes,
            distribution: Distribution::Uniform,
            offset: 0,
            size: None,
            round_to_sector: true,
            trace: None,
        }
    }

    /// The pattern the reviews precondition with: the profile itself, or
    /// for 100 %-read profiles the same pattern as 100 % write.
    pub fn precondition_spec(&self) -> WorkloadSpec {
        let mut s = self.spec();
        if self.read_percent == 100 {
            s.read_fraction = 0.0;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_builds() {
        for p in Profile::all() {
            let s = p.spec();
            assert!(s.resolve(1 << 30, 512).is_ok(), "{}", p.name);
            assert!(s.resolve(1 << 30, 4096).is_ok(), "{}", p.name);
        }
    }

    #[test]
    fn fileserver_mix_is_the_reviews() {
        let s = Profile::by_name("fileserver").unwrap().spec();
        match s.block_sizes {
            BlockSizes::Split(v) => {
                assert_eq!(v.len(), 8);
                assert!((v[3].1 - 0.60).abs() < 1e-12);
            }
            _ => panic!("fileserver is a mix"),
        }
        assert_eq!(
            Profile::by_name("webserver")
                .unwrap()
                .precondition_spec()
                .read_fraction,
            0.0
        );
    }
}

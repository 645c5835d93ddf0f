//! The metadata a recorded trace carries in its native metadata block
//! (`docs/trace-format.md`): who recorded which program, which windows of the run
//! it holds, and per thread (core) the records and instructions kept and the
//! instructions the thread ran. It is JSON, read with the trailer (by seeking) or
//! at the end of a stream; unknown keys are ignored, so later versions may add some.

use super::window::Sampling;
use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

/// What one thread (one core of the trace) ran and what was kept of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadCounts {
    /// The core its records carry.
    pub core: u16,
    /// Records kept.
    pub records: u64,
    /// Instructions kept (each record is one plus its `instrs`).
    pub instructions: u64,
    /// Instructions the thread ran until the recording ended, kept or not.
    pub program_instructions: u64,
}

/// The metadata of a recorded trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// The recorder, e.g. `qemu-x86_64 7.2.22 with tiersim's plugin`.
    pub recorder: String,
    /// The program and its arguments.
    pub program: Vec<String>,
    /// The windows of the run the trace holds.
    #[serde(default)]
    pub sampling: Sampling,
    /// One entry per thread that ran, by core.
    pub threads: Vec<ThreadCounts>,
}

/// The part of a program's run a sampled trace holds, as reports state it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SampledRun {
    #[serde(flatten)]
    pub sampling: Sampling,
    /// Instructions the program ran (until the recording ended) per instruction
    /// kept: the factor from the trace's totals to that span's.
    pub scale: f64,
}

impl TraceMeta {
    /// Reads metadata bytes of the trace `name`.
    pub fn parse(bytes: &[u8], name: &str) -> Result<TraceMeta> {
        serde_json::from_slice(bytes).map_err(|e| anyhow!("{name}: corrupt metadata block: {e}"))
    }

    /// The bytes to store.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("metadata serialises")
    }

    /// The cores with records, in order.
    pub fn cores(&self) -> Vec<u16> {
        self.threads.iter().filter(|t| t.records > 0).map(|t| t.core).collect()
    }

    /// Instructions the program ran for every one kept: the factor from the trace's
    /// totals to the whole run's (1 for a trace of the whole run).
    pub fn scale(&self) -> f64 {
        let kept: u64 = self.threads.iter().map(|t| t.instructions).sum();
        let ran: u64 = self.threads.iter().map(|t| t.program_instructions).sum();
        if kept == 0 {
            1.0
        } else {
            ran as f64 / kept as f64
        }
    }

    /// Whether the trace holds only part of the run.
    pub fn is_sampled(&self) -> bool {
        !self.sampling.is_whole()
    }

    /// The sampling and its scale, for a trace of part of the run.
    pub fn sampled_run(&self) -> Option<SampledRun> {
        self.is_sampled().then(|| SampledRun { sampling: self.sampling, scale: self.scale() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_scale() {
        let m = TraceMeta {
            recorder: "test".into(),
            program: vec!["a.out".into()],
            sampling: Sampling::new(100, None, Some(10), Some(40)).unwrap(),
            threads: vec![
                ThreadCounts { core: 0, records: 5, instructions: 30, program_instructions: 200 },
                ThreadCounts { core: 1, records: 0, instructions: 0, program_instructions: 40 },
                ThreadCounts { core: 2, records: 2, instructions: 10, program_instructions: 160 },
            ],
        };
        let back = TraceMeta::parse(&m.to_bytes(), "t").unwrap();
        assert_eq!(back, m);
        assert_eq!(back.cores(), [0, 2]);
        // 400 instructions ran, 40 kept.
        assert_eq!(back.scale(), 10.0);
        assert!(back.is_sampled());
        assert!(TraceMeta::parse(b"{\"recorder\": 3}", "t").unwrap_err().to_string().starts_with("t: corrupt metadata block"));
    }
}

//! Samples in the C baselines' line format `impl,op,bytes,npes,usec`, which the job,
//! the baselines and the driver all speak.

/// Who produced a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Impl {
    /// Typed SHMEM (this project).
    Ours,
    /// Open MPI's OSHMEM.
    Oshmem,
    /// Open MPI's MPI.
    Mpi,
    /// A floor: of the machine (the cache-line round trip, [`RTT_OP`]), or of an
    /// operation, under its name (its copies alone, [`crate::floors::copies_alone`]).
    Floor,
    /// The copies alone of an operation per call of it, both timed in alternating
    /// batches ([`crate::timing::Timer::measure_pairs`]): the median of the pairs' ratios.
    /// Its figure is that ratio, not µs.
    CopiesPerOurs,
}

impl Impl {
    /// The name in the first CSV column.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Oshmem => "oshmem",
            Impl::Mpi => "mpi",
            Impl::Floor => "floor",
            Impl::CopiesPerOurs => "copies_per_ours",
        }
    }

    fn from_name(name: &str) -> Option<Impl> {
        [
            Impl::Ours,
            Impl::Oshmem,
            Impl::Mpi,
            Impl::Floor,
            Impl::CopiesPerOurs,
        ]
        .into_iter()
        .find(|i| i.name() == name)
    }
}

/// The `op` of the cache-line round-trip floor (measured on 64 bytes).
pub(crate) const RTT_OP: &str = "cache_line_rtt";

/// One figure: per-call latency of `op` on `bytes` with `npes` PEs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    /// Who.
    pub implementation: Impl,
    /// The operation's CSV name.
    pub op: String,
    /// Message size (see `Op` for what it means per operation).
    pub bytes: usize,
    /// PEs (ranks) of the run.
    pub npes: usize,
    /// Microseconds per call (for [`Impl::CopiesPerOurs`], the ratio).
    pub usec: f64,
}

impl Sample {
    /// A sample.
    pub(crate) fn new(
        implementation: Impl,
        op: &str,
        bytes: usize,
        npes: usize,
        usec: f64,
    ) -> Sample {
        Sample {
            implementation,
            op: op.to_string(),
            bytes,
            npes,
            usec,
        }
    }

    /// The sample as a CSV line (without newline).
    pub(crate) fn to_csv(&self) -> String {
        format!(
            "{},{},{},{},{:.4}",
            self.implementation.name(),
            self.op,
            self.bytes,
            self.npes,
            self.usec
        )
    }

    /// Parses one CSV line; `None` for anything that is not a sample line.
    pub(crate) fn parse(line: &str) -> Option<Sample> {
        let mut fields = line.trim().split(',');
        let implementation = Impl::from_name(fields.next()?)?;
        let op = fields.next()?.to_string();
        let bytes = fields.next()?.parse().ok()?;
        let npes = fields.next()?.parse().ok()?;
        let usec: f64 = fields.next()?.parse().ok()?;
        if fields.next().is_some() || !usec.is_finite() {
            return None;
        }
        Some(Sample {
            implementation,
            op,
            bytes,
            npes,
            usec,
        })
    }

    /// Every sample line of `text`; other lines are skipped.
    pub(crate) fn parse_all(text: &str) -> Vec<Sample> {
        text.lines().filter_map(Sample::parse).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_noise_is_skipped() {
        let s = Sample::new(Impl::Ours, "broadcast", 8, 2, 0.125);
        assert_eq!(Sample::parse(&s.to_csv()), Some(s));
        let text = "oshmem,barrier,0,2,0.295\n[warn] something\nmpi,fcollect,8,2,0.247\nmpi,x,1\n";
        let all = Sample::parse_all(text);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].implementation, Impl::Oshmem);
        assert_eq!(all[1].op, "fcollect");
        assert_eq!(all[1].usec, 0.247);
    }
}

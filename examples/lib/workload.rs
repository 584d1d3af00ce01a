//! The line in which an example reports what it computed: its compute time on PE 0
//! (from its start to the collective that completes the result, without the final
//! check) and a checksum of the whole result, so that a benchmark can hold the parallel
//! run to a single-process one of the same computation.

use std::time::Duration;

/// Start of the line.
const PREFIX: &str = "compute time: ";

/// FNV-1a over the little-endian bytes of 64-bit words: equal for equal sequences only
/// (up to hash collisions), and sensitive to their order.
pub fn checksum(words: impl IntoIterator<Item = u64>) -> u64 {
    words.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, word| {
        word.to_le_bytes().iter().fold(hash, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    })
}

/// The line: `compute time: 12.345 ms, checksum 0123456789abcdef`.
pub fn line(compute: Duration, checksum: u64) -> String {
    format!(
        "{PREFIX}{:.3} ms, checksum {checksum:016x}",
        compute.as_secs_f64() * 1e3
    )
}

/// The compute time and checksum of the first such line in `output` (an example's
/// standard output); anything after the checksum on that line is ignored.
pub fn parse(output: &str) -> Option<(Duration, u64)> {
    let rest = output.lines().find_map(|l| l.strip_prefix(PREFIX))?;
    let (ms, rest) = rest.split_once(" ms, checksum ")?;
    let ms: f64 = ms.parse().ok()?;
    let hex = rest.get(..16)?;
    let checksum = u64::from_str_radix(hex, 16).ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| (Duration::from_secs_f64(ms / 1e3), checksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_parses_back() {
        let text = format!(
            "heat2d: ...\n{} (15.20 µs per iteration)\n",
            line(Duration::from_micros(12_345), 0xabc)
        );
        assert!(text.contains("compute time: 12.345 ms, checksum 0000000000000abc"));
        assert_eq!(parse(&text), Some((Duration::from_micros(12_345), 0xabc)));
        assert_eq!(parse("compute time: x ms, checksum 00"), None);
        assert_eq!(parse("nothing here"), None);
    }

    #[test]
    fn checksums_see_values_and_order() {
        assert_ne!(checksum([1, 2]), checksum([2, 1]));
        assert_ne!(checksum([1]), checksum([1, 0]));
    }
}

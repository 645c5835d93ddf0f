//! Sizes written the way people write them in configs and on the command line:
//! `4096`, `"4KiB"`, `"2MB"`, `"8GiB"` (binary multiples either way), and capacities
//! that may be relative to the workload footprint (`"25%"`).

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A size in bytes. Parsed from an integer or a string with an optional unit
/// suffix (K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB; all binary multiples).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

impl Size {
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `text` as a size; the error says what was expected.
    ///
    /// ```
    /// use tiersim::units::Size;
    /// assert_eq!(Size::parse("8GiB"), Ok(Size(8 << 30)));
    /// assert_eq!(Size::parse("1.5k"), Ok(Size(1536)));
    /// assert!(Size::parse("lots").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Size, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let num = num.replace('_', "");
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(format!("`{text}` is not a size (expected e.g. 4096, 64KiB, 2MB, 8GiB)")),
        };
        let value: f64 = num
            .parse()
            .map_err(|_| format!("`{text}` is not a size (expected e.g. 4096, 64KiB, 2MB, 8GiB)"))?;
        let bytes = value * mult as f64;
        if !(0.0..1.8e19).contains(&bytes) || bytes.fract() != 0.0 {
            return Err(format!("`{text}` is not a whole number of bytes"));
        }
        Ok(Size(bytes as u64))
    }
}

impl fmt::Display for Size {
    /// Prints the largest binary unit that divides the size exactly (`4GiB`, `1536KiB`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 4] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (m, name) in UNITS {
            if self.0 >= m && self.0.is_multiple_of(m) {
                return write!(f, "{}{}", self.0 / m, name);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as 4096, \"64KiB\" or \"8GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v).map(Size).map_err(|_| E::custom(format!("size must not be negative (got {v})")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                Size::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A tier capacity: an absolute size, or a share of the run's total footprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Capacity {
    Bytes(u64),
    /// Percentage of the footprint (e.g. 25.0 for `"25%"`).
    Percent(f64),
}

impl Capacity {
    /// Resolves to bytes for a run whose footprint is `footprint` bytes, rounded up to
    /// whole `granule`s (frames).
    ///
    /// ```
    /// use tiersim::units::Capacity;
    /// let quarter = Capacity::parse("25%").unwrap();
    /// assert_eq!(quarter.resolve(8 << 30, 4096), 2 << 30);
    /// assert_eq!(Capacity::parse("4GiB").unwrap().resolve(1, 4096), 4 << 30);
    /// ```
    pub fn resolve(self, footprint: u64, granule: u64) -> u64 {
        self.exact(footprint).div_ceil(granule) * granule
    }

    /// The bytes asked for, before rounding: the size, or the share of `footprint`
    /// rounded up to a whole byte.
    pub fn exact(self, footprint: u64) -> u64 {
        match self {
            Capacity::Bytes(b) => b,
            Capacity::Percent(p) => (footprint as f64 * p / 100.0).ceil() as u64,
        }
    }

    /// Whether the capacity is a share of the footprint (not an absolute size).
    pub fn is_share(self) -> bool {
        matches!(self, Capacity::Percent(_))
    }

    pub fn parse(text: &str) -> Result<Capacity, String> {
        let t = text.trim();
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| format!("`{text}` is not a percentage"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("`{text}` must be a non-negative percentage"));
            }
            return Ok(Capacity::Percent(v));
        }
        Size::parse(t).map(|s| Capacity::Bytes(s.0))
    }
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capacity::Bytes(b) => Size(*b).fmt(f),
            Capacity::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for Capacity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Capacity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Capacity, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Capacity;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a capacity such as \"4GiB\" or \"25%\" (of the footprint)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Capacity, E> {
                Ok(Capacity::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Capacity, E> {
                u64::try_from(v)
                    .map(Capacity::Bytes)
                    .map_err(|_| E::custom(format!("capacity must not be negative (got {v})")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Capacity, E> {
                Capacity::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_with_units() {
        assert_eq!(Size::parse("4096"), Ok(Size(4096)));
        assert_eq!(Size::parse("4KiB"), Ok(Size(4096)));
        assert_eq!(Size::parse("2MB"), Ok(Size(2 << 20)));
        assert_eq!(Size::parse("8 GiB"), Ok(Size(8 << 30)));
        assert_eq!(Size::parse("1.5k"), Ok(Size(1536)));
        assert!(Size::parse("4 furlongs").is_err());
        assert!(Size::parse("-4k").is_err());
        assert!(Size::parse("0.3").is_err());
    }

    #[test]
    fn capacity_resolves_relative_to_footprint_in_whole_frames() {
        assert_eq!(Capacity::parse("25%").unwrap().resolve(1 << 30, 4096), 1 << 28);
        // 10 % of 10 frames + 1 byte rounds up to 2 frames.
        assert_eq!(Capacity::Percent(10.0).resolve(10 * 4096 + 1, 4096), 2 * 4096);
        assert_eq!(Capacity::parse("4GiB").unwrap(), Capacity::Bytes(4 << 30));
        assert!(Capacity::parse("-5%").is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["4KiB", "8GiB", "1536KiB", "100"] {
            assert_eq!(Size::parse(s).unwrap().to_string(), s);
        }
    }
}

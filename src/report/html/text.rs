//! The text of the report's tables and axes: HTML escaping, numbers rounded and
//! grouped for reading, and the labels (words and unit) of the report's fields.

use serde_json::Value;

/// How the tables name the report's fields: key, label with its unit. Keys not listed
/// are shown as they are.
const FIELD_LABELS: &[(&str, &str)] = &[
    ("seconds", "simulated time (s)"),
    ("ipc", "IPC (instructions per cycle)"),
    ("amat_ns", "AMAT (ns; demand memory accesses)"),
    ("fast_tier_fraction", "fast-tier share of demand accesses"),
    ("page_moves", "page moves"),
    ("moved_bytes", "bytes moved"),
    ("migrated_bytes", "bytes migrated"),
    ("merge_copies", "huge pages merged from copies"),
    ("merge_copied_bytes", "bytes copied to merge"),
    ("migration_to_footprint", "bytes moved per byte of footprint"),
    ("tlb_mpki", "TLB misses per 1000 instructions"),
    ("llc_mpki", "LLC misses per 1000 instructions"),
    ("energy_j", "memory energy (J)"),
    ("slow_tier_writes", "slow-tier writes (64 B)"),
    ("capacity_bytes", "capacity (bytes)"),
    ("demand_accesses", "demand accesses"),
    ("mechanism_bytes", "mechanism traffic (bytes)"),
    ("dynamic_energy_j", "dynamic energy (J)"),
    ("static_energy_j", "static energy (J)"),
];

/// The label of field `key` in a table: its words and unit, or the key itself.
pub(super) fn label(key: &str) -> &str {
    FIELD_LABELS.iter().find(|(k, _)| *k == key).map_or(key, |(_, l)| l)
}

/// Text with the characters HTML gives a meaning escaped.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// `v` rounded to `digits` significant digits, without trailing zeros.
pub(super) fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".to_string() } else { v.to_string() };
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A number short enough for an axis: three significant digits, with k, M or G from
/// 10 000 up and in scientific notation below 0.001.
pub(super) fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", significant(v / 1e9, 3))
    } else if a >= 1e6 {
        format!("{}M", significant(v / 1e6, 3))
    } else if a >= 1e4 {
        format!("{}k", significant(v / 1e3, 3))
    } else if a > 0.0 && a < 1e-3 {
        format!("{v:.1e}")
    } else {
        significant(v, 3)
    }
}

/// A JSON value as a table cell: numbers to four significant digits (whole numbers in
/// full), text escaped.
pub(super) fn cell(v: &Value) -> String {
    match v {
        Value::Null => "–".to_string(),
        Value::Number(n) if n.is_u64() || n.is_i64() => grouped(&n.to_string()),
        Value::Number(n) => significant(n.as_f64().unwrap_or(f64::NAN), 4),
        Value::String(s) => escape(s),
        Value::Bool(b) => b.to_string(),
        other => escape(&other.to_string()),
    }
}

/// A whole number's digits in groups of three from 10 000 up, split by narrow
/// no-break spaces (96 000 000 100), as the tables show them.
fn grouped(digits: &str) -> String {
    let (sign, digits) = digits.strip_prefix('-').map_or(("", digits), |d| ("-", d));
    if digits.len() < 5 {
        return format!("{sign}{digits}");
    }
    let mut out = String::from(sign);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

//! A CronJob's schedule and time zone (`validateCronJobSpec` in
//! `pkg/apis/batch/validation/validation.go`). Upstream parses the schedule with
//! `github.com/robfig/cron` (`ParseStandard`: v1 in 1.20, v3 after) and reports the parser's
//! error text, so this is a small parser of that syntax with those errors: five fields of
//! numbers, names, `*`/`?`, ranges, steps and lists, the `@hourly`-style descriptors and
//! `@every <duration>`, and from v3 a leading `TZ=` or `CRON_TZ=` location.

use std::path::Path;

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use crate::KubeVersion;

/// From 1.21 upstream parses with robfig/cron v3: lower-case errors, the fields listed as a
/// Go slice, and a `TZ=` prefix.
const CRON_V3_SINCE: KubeVersion = KubeVersion::new(1, 21);
/// From 1.29 (the first release read with it) a new schedule may not name a time zone.
const NO_TZ_IN_SCHEDULE_SINCE: KubeVersion = KubeVersion::new(1, 29);
/// From 1.34 (read in 1.35) a parser panic is reported, not a server error
/// (`ParseCronScheduleWithPanicRecovery`).
const PANIC_RECOVERY_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// A field's bounds and names (robfig/cron `spec.go`).
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// The parser's wording: v1 capitalises its errors.
struct Parser {
    v3: bool,
}

impl Parser {
    fn error(&self, text: String) -> String {
        if self.v3 {
            return text;
        }
        let mut chars = text.chars();
        chars.next().map_or(text.clone(), |first| {
            first.to_uppercase().chain(chars).collect()
        })
    }

    /// `ParseStandard`.
    fn parse(&self, spec: &str) -> Result<(), String> {
        if spec.is_empty() {
            return Err(self.error("empty spec string".to_owned()));
        }
        let mut spec = spec;
        if self.v3 && (spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=")) {
            let eq = spec.find('=').unwrap_or(0);
            let Some(space) = spec.find(' ') else {
                // Go slices spec[eq+1:-1] and panics.
                return Err(
                    "invalid schedule format: runtime error: slice bounds out of range [:-1]"
                        .to_owned(),
                );
            };
            let name = spec.get(eq + 1..space).unwrap_or("");
            if !known_location(name) {
                return Err(format!(
                    "provided bad location {name}: unknown time zone {name}"
                ));
            }
            spec = spec.get(space..).unwrap_or("").trim();
        }
        if spec.starts_with('@') {
            return self.descriptor(spec);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            let shown = if self.v3 {
                format!("[{}]", fields.join(" "))
            } else {
                spec.to_owned()
            };
            return Err(self.error(format!(
                "expected exactly 5 fields, found {}: {shown}",
                fields.len()
            )));
        }
        for (field, bounds) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
            for expr in field.split(',').filter(|e| !e.is_empty()) {
                self.range(expr, bounds)?;
            }
        }
        Ok(())
    }

    fn descriptor(&self, spec: &str) -> Result<(), String> {
        if DESCRIPTORS.contains(&spec) {
            return Ok(());
        }
        if let Some(duration) = spec.strip_prefix("@every ") {
            return go_duration(duration)
                .map_err(|err| self.error(format!("failed to parse duration {spec}: {err}")));
        }
        Err(self.error(format!("unrecognized descriptor: {spec}")))
    }

    /// `getRange`.
    fn range(&self, expr: &str, bounds: &Bounds) -> Result<(), String> {
        let range_and_step: Vec<&str> = expr.split('/').collect();
        let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
        let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
            (bounds.min, bounds.max)
        } else {
            let start = self.int_or_name(low_and_high[0], bounds)?;
            match low_and_high.len() {
                1 => (start, start),
                2 => (start, self.int_or_name(low_and_high[1], bounds)?),
                _ => return Err(self.error(format!("too many hyphens: {expr}"))),
            }
        };
        let step = match range_and_step.len() {
            1 => 1,
            2 => {
                let step = self.int(range_and_step[1])?;
                if low_and_high.len() == 1 {
                    end = bounds.max;
                }
                step
            }
            _ => return Err(self.error(format!("too many slashes: {expr}"))),
        };
        if start < bounds.min {
            return Err(self.error(format!(
                "beginning of range ({start}) below minimum ({}): {expr}",
                bounds.min
            )));
        }
        if end > bounds.max {
            return Err(self.error(format!(
                "end of range ({end}) above maximum ({}): {expr}",
                bounds.max
            )));
        }
        if start > end {
            return Err(self.error(format!(
                "beginning of range ({start}) beyond end of range ({end}): {expr}"
            )));
        }
        if step == 0 {
            return Err(self.error(format!("step of range should be a positive number: {expr}")));
        }
        Ok(())
    }

    fn int_or_name(&self, expr: &str, bounds: &Bounds) -> Result<u64, String> {
        let lower = expr.to_lowercase();
        match bounds.names.iter().find(|(name, _)| *name == lower) {
            Some((_, value)) => Ok(*value),
            None => self.int(expr),
        }
    }

    /// `mustParseInt`, with `strconv.Atoi`'s errors.
    fn int(&self, expr: &str) -> Result<u64, String> {
        let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
        let syntax = || {
            self.error(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
                Value::from(expr)
            ))
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(syntax());
        }
        let Ok(value) = expr.parse::<i64>() else {
            return Err(self.error(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
                Value::from(expr)
            )));
        };
        u64::try_from(value)
            .map_err(|_| self.error(format!("negative number ({value}) not allowed: {expr}")))
    }
}

/// Go's `time.ParseDuration`, for `@every`: signed sequences of decimal numbers with units.
fn go_duration(text: &str) -> Result<(), String> {
    let quoted = Value::from(text);
    let invalid = || format!("time: invalid duration {quoted}");
    let mut rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {quoted}"));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!(
                "time: unknown unit {} in duration {quoted}",
                Value::from(unit)
            ));
        }
        rest = &rest[unit_len..];
    }
    Ok(())
}

/// The directories Go's `time.LoadLocation` reads on Linux (`platformZoneSources`).
const ZONE_SOURCES: &[&str] = &[
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// Whether `time.LoadLocation(name)` finds the zone: `UTC`, or a zoneinfo file (a name of
/// plain characters only, so it never leaves the zoneinfo directory).
fn known_location(name: &str) -> bool {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return true;
    }
    let plain = name.split('/').all(|part| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c))
    });
    plain
        && ZONE_SOURCES
            .iter()
            .any(|dir| Path::new(&format!("{dir}{name}")).is_file())
}

/// `validTimeZoneCharacters` for each `/`-separated part.
fn time_zone_part(part: &str) -> bool {
    part != "."
        && part != ".."
        && !part.starts_with('-')
        && (1..=14).contains(&part.len())
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_+".contains(c))
}

/// `validateCronJobSpec`'s schedule and time zone (`validateScheduleFormat`,
/// `validateTimeZone`); `old` is the stored spec on an update.
pub(super) fn cron_job_schedule(
    spec: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    let schedule_at = at.child("schedule");
    let schedule = spec.get("schedule").and_then(Value::as_str).unwrap_or("");
    let time_zone = spec.get("timeZone").filter(|t| !t.is_null());
    let shown = Value::from(schedule);
    if schedule.is_empty() {
        errors.required(&schedule_at, "");
    } else {
        let parser = Parser {
            v3: release >= CRON_V3_SINCE,
        };
        if let Err(message) = parser.parse(schedule) {
            let recovered = message.starts_with("invalid schedule format:");
            if !recovered || release >= PANIC_RECOVERY_SINCE {
                errors.invalid(&schedule_at, Shown::Plain(&shown), &message);
            }
        }
        let old_has_tz = old
            .and_then(|o| o.get("schedule"))
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("TZ"));
        let allow_tz = release < NO_TZ_IN_SCHEDULE_SINCE || old_has_tz;
        if schedule.contains("TZ") && parser_has_time_zones(release) {
            if allow_tz && time_zone.is_some() {
                errors.invalid(
                    &schedule_at,
                    Shown::Plain(&shown),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                );
            } else if !allow_tz {
                errors.invalid(
                    &schedule_at,
                    Shown::Plain(&shown),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                );
            }
        }
    }
    let unchanged = old.is_some_and(|o| o.get("timeZone").filter(|t| !t.is_null()) == time_zone);
    if let Some(zone) = time_zone
        && !unchanged
    {
        time_zone_errors(zone, &at.child("timeZone"), errors);
    }
}

/// Whether the release's CronJob has a `timeZone` field to check against a `TZ=` schedule.
fn parser_has_time_zones(release: KubeVersion) -> bool {
    release >= CRON_V3_SINCE
}

/// `validateTimeZone`.
fn time_zone_errors(zone: &Value, path: &FieldPath, errors: &mut Errors) {
    let name = zone.as_str().unwrap_or("");
    let shown = Shown::Plain(zone);
    if name.is_empty() {
        errors.invalid(path, shown, "timeZone must be nil or non-empty string");
        return;
    }
    if !name.split('/').all(time_zone_part) {
        errors.invalid(path, shown, &format!("unknown time zone {name}"));
        return;
    }
    if name.eq_ignore_ascii_case("Local") {
        errors.invalid(
            path,
            shown,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    if !known_location(name) {
        errors.invalid(path, shown, &format!("unknown time zone {name}"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(spec: &Value, old: Option<&Value>, minor: u16) -> Vec<String> {
        let mut errors = Errors::new(KubeVersion::new(1, minor));
        cron_job_schedule(spec, old, &FieldPath::of("spec"), &mut errors);
        errors
            .into_causes()
            .into_iter()
            .map(|c| c.message.unwrap_or_default())
            .collect()
    }

    #[test]
    fn schedules_parse_as_robfig_cron_parses_them() {
        // robfig/cron v3 ParseStandard (1.21+), v1 in 1.20 (capitalised, the spec shown).
        for ok in [
            "*/5 * * * *",
            "0 0 1 jan,JUL mon-fri",
            "@hourly",
            "@every 1h30m",
            "? * * * *",
        ] {
            assert!(run(&json!({"schedule": ok}), None, 34).is_empty(), "{ok}");
        }
        let cases = [
            (
                "* * *",
                34,
                "Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]",
            ),
            (
                "* * *",
                20,
                "Invalid value: \"* * *\": Expected exactly 5 fields, found 3: * * *",
            ),
            (
                "70 * * * *",
                34,
                "Invalid value: \"70 * * * *\": end of range (70) above maximum (59): 70",
            ),
            (
                "x * * * *",
                28,
                "Invalid value: \"x * * * *\": failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                "@fortnightly",
                34,
                "Invalid value: \"@fortnightly\": unrecognized descriptor: @fortnightly",
            ),
            (
                "@every 1d",
                34,
                "Invalid value: \"@every 1d\": failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\"",
            ),
            (
                "1-2-3 * * * *",
                34,
                "Invalid value: \"1-2-3 * * * *\": too many hyphens: 1-2-3",
            ),
            (
                "5-1 * * * *",
                34,
                "Invalid value: \"5-1 * * * *\": beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                34,
                "Invalid value: \"*/0 * * * *\": step of range should be a positive number: */0",
            ),
        ];
        for (schedule, minor, want) in cases {
            assert_eq!(
                run(&json!({"schedule": schedule}), None, minor),
                [want],
                "{schedule} in 1.{minor}"
            );
        }
        assert_eq!(run(&json!({}), None, 34), ["Required value"]);
    }

    #[test]
    fn time_zones_live_in_the_time_zone_field() {
        // validateScheduleFormat: TZ in a new schedule is refused from 1.29.
        assert_eq!(
            run(&json!({"schedule": "TZ=UTC 0 * * * *"}), None, 34),
            [
                "Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            ]
        );
        assert!(run(&json!({"schedule": "TZ=UTC 0 * * * *"}), None, 28).is_empty());
        assert_eq!(
            run(
                &json!({"schedule": "TZ=UTC 0 * * * *", "timeZone": "UTC"}),
                None,
                28
            ),
            [
                "Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
            ]
        );
        // validateTimeZone, checked only when it changes.
        assert_eq!(
            run(
                &json!({"schedule": "@daily", "timeZone": "Mars/../Base"}),
                None,
                34
            ),
            ["Invalid value: \"Mars/../Base\": unknown time zone Mars/../Base"]
        );
        assert_eq!(
            run(&json!({"schedule": "@daily", "timeZone": ""}), None, 34),
            ["Invalid value: \"\": timeZone must be nil or non-empty string"]
        );
        let local = json!({"schedule": "@daily", "timeZone": "Local"});
        assert_eq!(
            run(&local, None, 34),
            [
                "Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
            ]
        );
        assert!(run(&local, Some(&local), 34).is_empty());
        assert!(run(&json!({"schedule": "@daily", "timeZone": "UTC"}), None, 34).is_empty());
    }

    #[test]
    fn go_durations() {
        assert!(go_duration("1h30m").is_ok());
        assert!(go_duration("1.5s").is_ok());
        assert_eq!(
            go_duration("1").unwrap_err(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            go_duration("h").unwrap_err(),
            "time: invalid duration \"h\""
        );
    }
}

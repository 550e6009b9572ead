//! `Quantity`: the fixed-point number Kubernetes uses for resource amounts (`500m`, `1.5Gi`, `1e3`).
//!
//! This module owns reading, comparing, adding and writing quantities the way
//! `k8s.io/apimachinery/pkg/api/resource` does, so that a value kapi accepts and prints is one
//! every Kubernetes client reads the same way.
//!
//! # Grammar
//!
//! `[+|-] number suffix`, where `number` is digits with at most one decimal point (`5`, `1.25`,
//! `.5`, `5.`) and `suffix` is one of
//!
//! * decimal SI: `n u m` (nothing) `k M G T P E` (powers of 1000);
//! * binary SI: `Ki Mi Gi Ti Pi Ei` (powers of 1024);
//! * a decimal exponent: `e` or `E` followed by a signed integer (`1e3`, `12E-2`, `1e+6`).
//!
//! Nothing else is accepted: no whitespace, no second sign or point, no other letters.
//! Upstream's scanner has a few corners that follow from its implementation rather than the
//! grammar, and kapi reproduces them so that both sides agree on every stored value: a suffix
//! with no digits before it reads as zero when upstream's fast path takes it (`Ki`, `m`, `-`,
//! `.`, `e5`) and is rejected where upstream falls through to its slow path (`Pi`, `Ei`, `e-10`).
//!
//! # Value
//!
//! Parsing is exact, then follows upstream's two adjustments: a non-zero value finer than
//! 10⁻⁹ is rounded away from zero to the next nano (`0.9n` is `1n`, `3.001n` is `4n`), and a
//! binary-SI value is silently capped at 2⁶³-1 in magnitude (`8Ei` reads as
//! `9223372036854775807`). A binary-SI value between -1 and 1 is switched to decimal SI.
//!
//! # Representation
//!
//! A quantity is `mantissa × 10^exponent` with an `i128` mantissa and an `i32` exponent, kept
//! normalised (no trailing zeros in the mantissa, zero stored as `0 × 10⁰`) so that equal values
//! have equal fields and `Eq`/`Hash` can work on them directly. The format the value was written
//! in ([`Format`]) travels alongside but takes no part in equality, ordering or hashing, as
//! upstream's `Cmp` ignores it too. Every value is a whole number of nanos, so the exponent is
//! never below -9.
//!
//! Upstream stores big values in an arbitrary-precision decimal; kapi holds any value with up to
//! 38 significant digits (39 below 2¹²⁷) and an exponent that fits in 32 bits, far beyond any
//! real resource amount. A value that needs more is reported as an overflow error (parsing) or
//! `None` (arithmetic), never wrapped or truncated. The same goes for an exponent outside 32
//! bits, which upstream silently truncates to 32 bits (`1e4294967296` reads as `1` there).
//!
//! # Canonical form
//!
//! [`Display`](fmt::Display) (and serialisation) write upstream's canonical form: the format
//! class of the input is kept, the suffix is the largest that leaves an integer mantissa, and
//! no precision is lost. `1.5` is `1500m`, `1000m` is `1`, `1.5Gi` is `1536Mi`, `1e3` stays
//! `1e3`. A binary-SI value below 1024 in magnitude or with a fraction is written in decimal SI
//! (`0.5Ki` is `512`, `1.1Ki` is `1126400m`); a decimal-SI value beyond `E` falls back to an
//! exponent (`1e21`). Two deliberate differences from upstream: its `String()` echoes some
//! non-canonical inputs back unchanged (`1.500`, `+1`, `1E3`; a known upstream bug), where kapi
//! always writes the canonical form; and upstream runs out of binary suffixes past `Ei` and then
//! drops the magnitude (2⁷⁰ prints as `1`), where kapi keeps `Ei` and a larger mantissa
//! (`1024Ei`).
//!
//! # Serde
//!
//! A quantity keeps the spelling it was read from (a string, up to 30 bytes, or a JSON number)
//! and serialises as that spelling, unchanged: `1000m` stays `1000m`, `0.5` stays `0.5`, and a
//! JSON number stays a number. Custom resources are stored verbatim upstream, so a typed client
//! that reads and writes one back must not rewrite it (GitOps tools would see drift). Arithmetic,
//! [`with_format`](Quantity::with_format) and [`canonical`](Quantity::canonical) give a quantity
//! without a spelling, written in canonical form; so is a longer string, and
//! [`Display`](fmt::Display) always writes the canonical form. Upstream's built-in types do
//! canonicalise on write (Go decodes into `resource.Quantity`, whose `MarshalJSON` writes the
//! canonical form); the server does the same for built-in kinds by serialising them inside
//! [`canonical_scope`].
//!
//! It deserialises from a string (surrounding whitespace trimmed, as upstream's JSON reader
//! does) or from a number, because generated types for int-or-string quantities receive `1` or
//! `0.5` as JSON numbers. A float arrives through serde as an `f64`, so its original spelling is
//! gone: kapi reads it from the shortest decimal that round-trips (`0.5`, `1000`) in decimal SI,
//! and writes it back as that `f64`. For the same reason an integer beyond 64 bits, which
//! serde_json hands over as an `f64`, keeps only 17 significant digits; write such values as
//! strings. `null` is rejected: an absent quantity is an `Option<Quantity>`, as for every value
//! type in this crate (upstream reads `null` as zero).

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a quantity is written: the suffix family it was read in, kept for writing it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// A decimal exponent, such as `12e6` (upstream `DecimalExponent`).
    DecimalExponent,
    /// A power of 1024, such as `12Mi` (upstream `BinarySI`).
    BinarySi,
    /// A power of 1000, such as `12M` or `500m` (upstream `DecimalSI`).
    #[default]
    DecimalSi,
}

impl Format {
    /// Upstream's name for this format: `DecimalExponent`, `BinarySI` or `DecimalSI`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySi => "BinarySI",
            Format::DecimalSi => "DecimalSI",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong reading a quantity; see [`QuantityError::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuantityErrorKind {
    /// The input was the empty string.
    Empty,
    /// The number part is malformed, or a character appears that no quantity contains.
    Syntax,
    /// The text after the number is not a known suffix or exponent.
    Suffix,
    /// The value is valid but needs more than 38 significant digits, or an exponent beyond 32
    /// bits, which upstream's arbitrary-precision decimal would hold and kapi cannot.
    Overflow,
}

/// An error reading a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    kind: QuantityErrorKind,
    input: String,
    reason: String,
}

impl QuantityError {
    fn new(kind: QuantityErrorKind, input: &str, reason: impl Into<String>) -> Self {
        // A request body can carry a megabyte of digits; the message only needs the start.
        const MAX_ECHO: usize = 64;
        let input = match input.char_indices().nth(MAX_ECHO) {
            Some((end, _)) => format!("{}...", input.get(..end).unwrap_or_default()),
            None => input.to_owned(),
        };
        Self {
            kind,
            input,
            reason: reason.into(),
        }
    }

    /// Which rule the input broke.
    pub fn kind(&self) -> QuantityErrorKind {
        self.kind
    }

    /// The text that failed to parse (shortened when very long).
    pub fn input(&self) -> &str {
        &self.input
    }
}

/// A fixed-point number with a remembered format, equivalent to upstream `resource.Quantity`.
///
/// Equality, ordering and hashing go by numeric value only: `1Ki == 1024`, `1000m == 1`.
/// See the [module documentation](self) for the grammar, rounding and canonical form.
#[derive(Clone, Copy)]
pub struct Quantity {
    /// Never `i128::MIN`, so negation cannot overflow; no trailing decimal zeros unless zero.
    mantissa: i128,
    /// Zero when the mantissa is zero; otherwise at least -9 (whole nanos).
    exponent: i32,
    format: Format,
    /// How the value was written when read, to write it back unchanged.
    spelling: Spelling,
}

/// The longest string spelling a quantity keeps (inline, so `Quantity` stays `Copy`).
const SPELLING_BYTES: usize = 30;

/// The spelling a quantity was read from.
#[derive(Clone, Copy)]
enum Spelling {
    /// None kept: written in canonical form.
    Canonical,
    /// A string, verbatim (trimmed of surrounding whitespace).
    Text {
        len: u8,
        bytes: [u8; SPELLING_BYTES],
    },
    /// A JSON integer.
    Int(i64),
    /// A JSON integer beyond `i64`.
    UInt(u64),
    /// A JSON number with a fraction or an exponent.
    Float(f64),
}

impl Spelling {
    fn text(text: &str) -> Spelling {
        let mut bytes = [0; SPELLING_BYTES];
        match bytes.get_mut(..text.len()) {
            Some(head) => {
                head.copy_from_slice(text.as_bytes());
                Spelling::Text {
                    len: text.len() as u8,
                    bytes,
                }
            }
            None => Spelling::Canonical,
        }
    }
}

thread_local! {
    /// Set inside [`canonical_scope`]: serialise every quantity in canonical form.
    static CANONICAL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every quantity it serialises written in canonical form, as upstream's
/// built-in types write theirs; the server wraps the codec of built-in kinds in it.
pub fn canonical_scope<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            CANONICAL.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(CANONICAL.with(|c| c.replace(true)));
    f()
}

/// 2⁶³-1: upstream caps a parsed binary-SI magnitude here.
const BINARY_SI_CAP: i128 = i64::MAX as i128;
/// The finest scale a quantity holds (nano).
const MIN_EXPONENT: i64 = -9;
/// The largest power of ten that fits in a `u128` (and `i128`).
const MAX_POW10: u32 = 38;

impl Quantity {
    /// Zero, in decimal SI.
    pub const ZERO: Quantity = Quantity {
        mantissa: 0,
        exponent: 0,
        format: Format::DecimalSi,
        spelling: Spelling::Canonical,
    };

    /// The integer `value` in the given format (upstream `NewQuantity`).
    pub fn from_i64(value: i64, format: Format) -> Quantity {
        let (mantissa, zeros) = strip_zeros(i128::from(value));
        Quantity {
            mantissa,
            // At most 18 zeros come off an i64.
            exponent: zeros as i32,
            format,
            spelling: Spelling::Canonical,
        }
    }

    /// `value` thousandths in the given format (upstream `NewMilliQuantity`).
    pub fn from_milli(value: i64, format: Format) -> Quantity {
        let (mantissa, zeros) = strip_zeros(i128::from(value));
        Quantity {
            mantissa,
            exponent: if mantissa == 0 { 0 } else { zeros as i32 - 3 },
            format,
            spelling: Spelling::Canonical,
        }
    }

    /// The format this quantity is written in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The same value written in another format (in canonical form).
    pub fn with_format(self, format: Format) -> Quantity {
        Quantity {
            format,
            spelling: Spelling::Canonical,
            ..self
        }
    }

    /// The same value without the spelling it was read from: it writes in canonical form.
    pub fn canonical(self) -> Quantity {
        Quantity {
            spelling: Spelling::Canonical,
            ..self
        }
    }

    /// The text this quantity serialises as: the string it was read from, the JSON number's
    /// digits, or the canonical form.
    pub fn spelling(&self) -> String {
        match self.spelling {
            Spelling::Canonical => self.to_string(),
            Spelling::Float(f) => f.to_string(),
            Spelling::Text { len, bytes } => {
                String::from_utf8_lossy(bytes.get(..usize::from(len)).unwrap_or_default())
                    .into_owned()
            }
            Spelling::Int(n) => n.to_string(),
            Spelling::UInt(n) => n.to_string(),
        }
    }

    /// The exact value as `(mantissa, exponent)`, meaning `mantissa × 10^exponent`, with no
    /// trailing zeros in the mantissa (zero is `(0, 0)`).
    pub fn to_decimal_parts(&self) -> (i128, i32) {
        (self.mantissa, self.exponent)
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1 as the value is negative, zero or positive.
    pub fn signum(&self) -> i32 {
        self.mantissa.signum() as i32
    }

    /// The nearest `f64`; huge values become infinite and tiny ones round as `f64` does.
    pub fn to_f64(&self) -> f64 {
        // Rust's float parser rounds correctly, which multiplying by a power of ten does not.
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// The value as an `i64` if it is a whole number that fits (upstream `AsInt64`).
    pub fn as_i64(&self) -> Option<i64> {
        if self.exponent < 0 {
            return None;
        }
        let value = self
            .mantissa
            .checked_mul(pow10_i128(self.exponent.unsigned_abs())?)?;
        i64::try_from(value).ok()
    }

    /// The value rounded away from zero to a whole number (upstream `Value`): `1.2` gives 2,
    /// `-1.2` gives -2. `None` when the result does not fit an `i64`, where upstream overflows
    /// silently.
    pub fn value(&self) -> Option<i64> {
        self.scaled_value(0)
    }

    /// The value in thousandths, rounded away from zero (upstream `MilliValue`): `1.5` gives
    /// 1500, `1n` gives 1. `None` when the result does not fit an `i64`.
    pub fn milli_value(&self) -> Option<i64> {
        self.scaled_value(-3)
    }

    /// The value in units of `10^scale`, rounded away from zero (upstream `ScaledValue`):
    /// `scaled_value(-9)` counts nanos, `scaled_value(3)` thousands. `None` when the result does
    /// not fit an `i64`.
    pub fn scaled_value(&self, scale: i32) -> Option<i64> {
        if self.mantissa == 0 {
            return Some(0);
        }
        let shift = i64::from(self.exponent) - i64::from(scale);
        let result = if shift >= 0 {
            let factor = pow10_i128(u32::try_from(shift).ok()?)?;
            self.mantissa.checked_mul(factor)?
        } else {
            match u32::try_from(-shift).ok().and_then(pow10_i128) {
                Some(divisor) => {
                    let quotient = self.mantissa / divisor;
                    if self.mantissa % divisor == 0 {
                        quotient
                    } else {
                        quotient + self.mantissa.signum()
                    }
                }
                // The divisor exceeds any mantissa: only the rounding unit is left.
                None => self.mantissa.signum(),
            }
        };
        i64::try_from(result).ok()
    }

    /// `self + rhs`, or `None` if the exact sum needs more than 38 significant digits.
    ///
    /// The sum keeps `self`'s format, unless `self` is zero, when it takes `rhs`'s: upstream's
    /// `Add` does the same so that `0 + 100m` is `100m`.
    pub fn checked_add(self, rhs: Quantity) -> Option<Quantity> {
        let format = if self.is_zero() {
            rhs.format
        } else {
            self.format
        };
        if rhs.is_zero() {
            return Some(self.with_format(format));
        }
        if self.is_zero() {
            return Some(rhs.with_format(format));
        }
        let exponent = self.exponent.min(rhs.exponent);
        let lhs_mantissa = scale_up(self.mantissa, self.exponent, exponent)?;
        let rhs_mantissa = scale_up(rhs.mantissa, rhs.exponent, exponent)?;
        let sum = lhs_mantissa.checked_add(rhs_mantissa)?;
        normalize(sum, i64::from(exponent), format)
    }

    /// `self - rhs`, or `None` if the exact difference needs more than 38 significant digits.
    /// The format follows the same rule as [`checked_add`](Self::checked_add).
    pub fn checked_sub(self, rhs: Quantity) -> Option<Quantity> {
        self.checked_add(-rhs)
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity::ZERO
    }
}

impl std::ops::Neg for Quantity {
    type Output = Quantity;

    /// The negated value in the same format; never overflows because the mantissa is never
    /// `i128::MIN`.
    fn neg(self) -> Quantity {
        Quantity {
            mantissa: -self.mantissa,
            spelling: Spelling::Canonical,
            ..self
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.mantissa == other.mantissa && self.exponent == other.exponent
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Normalisation makes these fields a function of the value alone, matching `eq`.
        self.mantissa.hash(state);
        self.exponent.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_sign = self.mantissa.signum().cmp(&other.mantissa.signum());
        if by_sign != Ordering::Equal || self.mantissa == 0 {
            return by_sign;
        }
        let magnitude = cmp_magnitude(
            self.mantissa.unsigned_abs(),
            self.exponent,
            other.mantissa.unsigned_abs(),
            other.exponent,
        );
        if self.mantissa > 0 {
            magnitude
        } else {
            magnitude.reverse()
        }
    }
}

/// Compares `a × 10^ea` with `b × 10^eb` for non-zero `a`, `b` without trailing zeros.
fn cmp_magnitude(a: u128, ea: i32, b: u128, eb: i32) -> Ordering {
    let (digits_a, digits_b) = (a.ilog10() + 1, b.ilog10() + 1);
    // Where the leading digit sits decides unless both lead at the same place.
    let lead_a = i64::from(digits_a) + i64::from(ea);
    let lead_b = i64::from(digits_b) + i64::from(eb);
    if lead_a != lead_b {
        return lead_a.cmp(&lead_b);
    }
    // Same leading place: compare the shorter mantissa with the longer one's leading digits.
    // Without trailing zeros, a longer mantissa whose head ties has a non-zero tail, so it wins.
    match digits_a.cmp(&digits_b) {
        Ordering::Equal => a.cmp(&b),
        Ordering::Greater => match pow10_u128(digits_a - digits_b) {
            Some(p) if a / p != b => (a / p).cmp(&b),
            _ => Ordering::Greater,
        },
        Ordering::Less => match pow10_u128(digits_b - digits_a) {
            Some(p) if b / p != a => a.cmp(&(b / p)),
            _ => Ordering::Less,
        },
    }
}

fn pow10_u128(n: u32) -> Option<u128> {
    10u128.checked_pow(n)
}

fn pow10_i128(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// Removes trailing decimal zeros, returning the rest and how many came off.
fn strip_zeros(mut mantissa: i128) -> (i128, u32) {
    let mut zeros = 0;
    while mantissa != 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        zeros += 1;
    }
    (mantissa, zeros)
}

/// `mantissa × 10^(from - to)` for `from >= to`, if it fits.
fn scale_up(mantissa: i128, from: i32, to: i32) -> Option<i128> {
    let shift = u32::try_from(i64::from(from) - i64::from(to)).ok()?;
    mantissa.checked_mul(pow10_i128(shift)?)
}

/// Builds a quantity from any `mantissa × 10^exponent`, if it fits the representation.
fn normalize(mantissa: i128, exponent: i64, format: Format) -> Option<Quantity> {
    if mantissa == 0 {
        return Some(Quantity::ZERO.with_format(format));
    }
    if mantissa == i128::MIN {
        return None;
    }
    let (mantissa, zeros) = strip_zeros(mantissa);
    let exponent = i32::try_from(exponent + i64::from(zeros)).ok()?;
    Some(Quantity {
        mantissa,
        exponent,
        format,
        spelling: Spelling::Canonical,
    })
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// What a suffix means: `value × base^exponent`, written in `format`.
struct Suffix {
    binary: bool,
    /// The power of 2 for binary suffixes, of 10 otherwise; as upstream reads it, before any
    /// 32-bit truncation.
    exponent: i64,
    format: Format,
}

fn interpret_suffix(suffix: &str) -> Option<Suffix> {
    let decimal = |exponent| Suffix {
        binary: false,
        exponent,
        format: Format::DecimalSi,
    };
    let binary = |exponent| Suffix {
        binary: true,
        exponent,
        format: Format::BinarySi,
    };
    Some(match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let digits = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            Suffix {
                binary: false,
                exponent: parse_go_int64(digits)?,
                format: Format::DecimalExponent,
            }
        }
    })
}

/// Reads a base-10 `int64` the way Go's `strconv.ParseInt` does: an optional sign, then one
/// or more ASCII digits, and nothing out of range.
fn parse_go_int64(text: &str) -> Option<i64> {
    let digits = text
        .strip_prefix('+')
        .or_else(|| text.strip_prefix('-'))
        .unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Rust's i64 parser takes the same sign and digit forms.
    text.parse().ok()
}

/// Whether `suffix` is `e`/`E`, an optional sign and digits: an exponent, whatever its size.
fn is_exponent_shaped(suffix: &str) -> bool {
    let Some(rest) = suffix.strip_prefix(['e', 'E']) else {
        return false;
    };
    let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Splits `text` after its leading run of ASCII digits.
fn split_digits(text: &str) -> (&str, &str) {
    let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
    let digits = text.get(..text.len() - rest.len()).unwrap_or_default();
    (digits, rest)
}

impl FromStr for Quantity {
    type Err = QuantityError;

    /// Parses a quantity exactly as upstream's `ParseQuantity` does; see the module docs.
    fn from_str(input: &str) -> Result<Quantity, QuantityError> {
        let parsed = parse(input)?;
        Ok(Quantity {
            spelling: Spelling::text(input),
            ..parsed
        })
    }
}

fn parse(input: &str) -> Result<Quantity, QuantityError> {
    use QuantityErrorKind::{Empty, Overflow, Suffix as SuffixKind, Syntax};
    if input.is_empty() {
        return Err(QuantityError::new(
            Empty,
            input,
            "a quantity cannot be empty",
        ));
    }
    let (negative, unsigned) = match input.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, input.strip_prefix('+').unwrap_or(input)),
    };
    let (int_digits, rest) = split_digits(unsigned);
    let (frac_digits, suffix_text) = match rest.strip_prefix('.') {
        Some(after_point) => split_digits(after_point),
        None => ("", rest),
    };

    let Some(suffix) = interpret_suffix(suffix_text) else {
        let at = input.len() - suffix_text.len();
        if is_exponent_shaped(suffix_text) {
            return Err(QuantityError::new(
                Overflow,
                input,
                "exponent does not fit in 64 bits",
            ));
        }
        return Err(match suffix_text.chars().next() {
            Some('.') => {
                QuantityError::new(Syntax, input, format!("second decimal point at byte {at}"))
            }
            Some(c @ ('+' | '-')) => QuantityError::new(
                Syntax,
                input,
                format!("misplaced sign {c:?} at byte {at}; a sign may only lead the number"),
            ),
            Some(c) if c.is_alphabetic() => QuantityError::new(
                SuffixKind,
                input,
                format!(
                    "unknown suffix {suffix_text:?}; expected one of n u m k M G T P E, \
                     Ki Mi Gi Ti Pi Ei, or an exponent such as e3"
                ),
            ),
            Some(c) => QuantityError::new(
                Syntax,
                input,
                format!("unexpected character {c:?} at byte {at}"),
            ),
            // Unreachable in practice: the empty suffix is always known.
            None => QuantityError::new(Syntax, input, "malformed number"),
        });
    };

    let no_digits = int_digits.is_empty() && frac_digits.is_empty();
    if no_digits {
        // Upstream reads a missing number as zero on its fast path and fails on its slow path
        // (where an empty numeral does not parse). The fast path takes binary suffixes up to
        // Ti and decimal scales from nano up, judged after its truncation to 32 bits.
        let fast_path = if suffix.binary {
            suffix.exponent <= 40
        } else {
            suffix.exponent as i32 >= -9
        };
        return if fast_path {
            Ok(Quantity::ZERO.with_format(suffix.format))
        } else {
            Err(QuantityError::new(
                Syntax,
                input,
                "no digits before the suffix",
            ))
        };
    }

    // Significant digits (leading zeros dropped), most significant first.
    let mut digits: Vec<u8> = int_digits
        .bytes()
        .chain(frac_digits.bytes())
        .skip_while(|&b| b == b'0')
        .map(|b| b - b'0')
        .collect();
    if digits.is_empty() {
        return Ok(Quantity::ZERO.with_format(suffix.format));
    }
    let Ok(frac_len) = i64::try_from(frac_digits.len()) else {
        return Err(QuantityError::new(Overflow, input, "number too long"));
    };
    let mut exponent = -frac_len;
    if suffix.binary {
        for _ in 0..suffix.exponent / 10 {
            multiply_digits(&mut digits, 1024);
        }
    } else {
        // Beyond 32 bits upstream truncates the exponent, changing the value silently.
        if i32::try_from(suffix.exponent).is_err() {
            return Err(QuantityError::new(
                Overflow,
                input,
                "exponent does not fit in 32 bits",
            ));
        }
        exponent = exponent.saturating_add(suffix.exponent);
    }

    round_up_to_nano(&mut digits, &mut exponent);
    while digits.last() == Some(&0) {
        digits.pop();
        exponent += 1;
    }

    let mut format = suffix.format;
    let mut magnitude = digits_to_i128(&digits);
    if suffix.binary {
        // Below 1 in magnitude: no binary suffix could show it, so upstream switches.
        let leading_place = i64::try_from(digits.len())
            .unwrap_or(i64::MAX)
            .saturating_add(exponent);
        if leading_place <= 0 {
            format = Format::DecimalSi;
        }
        if exceeds_binary_cap(magnitude, exponent) {
            magnitude = Some(BINARY_SI_CAP);
            exponent = 0;
        }
    }
    let Some(magnitude) = magnitude else {
        return Err(QuantityError::new(
            Overflow,
            input,
            "more than 38 significant digits",
        ));
    };
    let mantissa = if negative { -magnitude } else { magnitude };
    normalize(mantissa, exponent, format)
        .ok_or_else(|| QuantityError::new(Overflow, input, "exponent does not fit in 32 bits"))
}

/// Multiplies a big-endian decimal digit string by a small factor in place.
fn multiply_digits(digits: &mut Vec<u8>, factor: u32) {
    let mut carry = 0u32;
    for digit in digits.iter_mut().rev() {
        let product = u32::from(*digit) * factor + carry;
        *digit = (product % 10) as u8;
        carry = product / 10;
    }
    let mut head = Vec::new();
    while carry > 0 {
        head.push((carry % 10) as u8);
        carry /= 10;
    }
    head.reverse();
    digits.splice(0..0, head);
}

/// Rounds `digits × 10^exponent` (non-zero) away from zero to a whole number of nanos.
fn round_up_to_nano(digits: &mut Vec<u8>, exponent: &mut i64) {
    if *exponent >= MIN_EXPONENT {
        return;
    }
    let drop = usize::try_from(MIN_EXPONENT.saturating_sub(*exponent)).unwrap_or(usize::MAX);
    *exponent = MIN_EXPONENT;
    if drop >= digits.len() {
        // Everything lies below a nano, and it is not zero: one nano.
        digits.clear();
        digits.push(1);
        return;
    }
    let keep = digits.len() - drop;
    let inexact = digits.iter().skip(keep).any(|&d| d != 0);
    digits.truncate(keep);
    if inexact {
        increment_digits(digits);
    }
}

fn increment_digits(digits: &mut Vec<u8>) {
    for digit in digits.iter_mut().rev() {
        if *digit == 9 {
            *digit = 0;
        } else {
            *digit += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

fn digits_to_i128(digits: &[u8]) -> Option<i128> {
    digits.iter().try_fold(0i128, |acc, &d| {
        acc.checked_mul(10)?.checked_add(i128::from(d))
    })
}

/// Whether `mantissa × 10^exponent` exceeds 2⁶³-1, where `mantissa` is `None` when the
/// significant digits did not fit an `i128`.
fn exceeds_binary_cap(mantissa: Option<i128>, exponent: i64) -> bool {
    let Some(mantissa) = mantissa else {
        // More than 38 significant digits of whole nanos is far above the cap.
        return true;
    };
    match u32::try_from(exponent) {
        Ok(up) => pow10_i128(up)
            .and_then(|scale| mantissa.checked_mul(scale))
            .is_none_or(|value| value > BINARY_SI_CAP),
        // -9 <= exponent < 0 after rounding, and the cap times 10⁹ fits an i128.
        Err(_) => pow10_i128(exponent.unsigned_abs().min(u64::from(MAX_POW10)) as u32)
            .is_none_or(|scale| mantissa > BINARY_SI_CAP.saturating_mul(scale)),
    }
}

// ---------------------------------------------------------------------------------------------
// Canonical form
// ---------------------------------------------------------------------------------------------

impl Quantity {
    /// For a binary-SI value that upstream writes with a binary suffix (a whole number of at
    /// least 1024 in magnitude), the mantissa and the power of 1024 to write.
    fn binary_parts(&self) -> Option<(i128, usize)> {
        if self.exponent < 0 {
            return None;
        }
        let mut value = self
            .mantissa
            .checked_mul(pow10_i128(self.exponent.unsigned_abs())?)?;
        if value.unsigned_abs() < 1024 {
            return None;
        }
        let mut power = 0;
        while power < BINARY_SUFFIXES.len() - 1 && value % 1024 == 0 {
            value /= 1024;
            power += 1;
        }
        Some((value, power))
    }
}

const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

fn decimal_si_suffix(exponent: i64) -> Option<&'static str> {
    Some(match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

impl Quantity {
    fn write_canonical(&self, out: &mut impl fmt::Write) -> fmt::Result {
        if self.mantissa == 0 {
            return out.write_str("0");
        }
        if self.format == Format::BinarySi
            && let Some((mantissa, power)) = self.binary_parts()
        {
            let suffix = BINARY_SUFFIXES.get(power).copied().unwrap_or_default();
            return write!(out, "{mantissa}{suffix}");
        }
        // Lower the exponent to a multiple of three, padding the mantissa with zeros.
        let exponent = i64::from(self.exponent).div_euclid(3) * 3;
        let padding = (i64::from(self.exponent) - exponent) as usize;
        write!(out, "{}{:0<padding$}", self.mantissa, "")?;
        let decimal_si = match self.format {
            Format::DecimalExponent => None,
            Format::BinarySi | Format::DecimalSi => decimal_si_suffix(exponent),
        };
        match decimal_si {
            Some(suffix) => out.write_str(suffix),
            // Past `E` (or for the exponent format) the exponent is spelled out.
            None if exponent == 0 => Ok(()),
            None => write!(out, "e{exponent}"),
        }
    }
}

impl fmt::Display for Quantity {
    /// Writes upstream's canonical form (`CanonicalizeBytes`); see the module docs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_none() {
            return self.write_canonical(f);
        }
        // Honour width and alignment for tables.
        let mut text = String::new();
        self.write_canonical(&mut text)?;
        f.pad(&text)
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({self}, {})", self.format)
    }
}

// ---------------------------------------------------------------------------------------------
// Serde
// ---------------------------------------------------------------------------------------------

impl Serialize for Quantity {
    /// Writes the spelling the quantity was read from, unchanged (see the module docs), or the
    /// canonical form inside [`canonical_scope`].
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if CANONICAL.with(Cell::get) {
            return serializer.collect_str(self);
        }
        match self.spelling {
            Spelling::Canonical => serializer.collect_str(self),
            Spelling::Text { len, bytes } => {
                match std::str::from_utf8(bytes.get(..usize::from(len)).unwrap_or_default()) {
                    Ok(text) => serializer.serialize_str(text),
                    Err(_) => serializer.collect_str(self),
                }
            }
            Spelling::Int(n) => serializer.serialize_i64(n),
            Spelling::UInt(n) => serializer.serialize_u64(n),
            Spelling::Float(f) => serializer.serialize_f64(f),
        }
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity as a string (such as \"500m\" or \"1Gi\") or a number")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Quantity, E> {
        // Upstream's JSON reader trims whitespace inside the string before parsing.
        text.trim().parse().map_err(E::custom)
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Quantity, E> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.visit_str(text),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(bytes), &self)),
        }
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Quantity, E> {
        Ok(Quantity {
            spelling: Spelling::Int(value),
            ..Quantity::from_i64(value, Format::DecimalSi)
        })
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Quantity, E> {
        let q = self.visit_i128(i128::from(value))?;
        Ok(Quantity {
            spelling: Spelling::UInt(value),
            ..q
        })
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Quantity, E> {
        normalize(value, 0, Format::DecimalSi)
            .ok_or_else(|| E::custom(format!("quantity {value} is out of range")))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Quantity, E> {
        match i128::try_from(value) {
            Ok(value) => self.visit_i128(value),
            Err(_) => Err(E::custom(format!("quantity {value} is out of range"))),
        }
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Quantity, E> {
        if !value.is_finite() {
            return Err(E::invalid_value(de::Unexpected::Float(value), &self));
        }
        // `Display` gives the shortest decimal that reads back as this float, with no exponent.
        let q: Quantity = value.to_string().parse().map_err(E::custom)?;
        Ok(Quantity {
            spelling: Spelling::Float(value),
            ..q
        })
    }
}

//! Python `re` patterns as `regex::bytes` patterns that read ASCII text exactly as Python does.
//!
//! The log reader's shapes are written once, in Python; the Rust readers that stand in for
//! them are built from those patterns when they are made. Only syntax with an exact equivalent
//! is translated: on a subject of ASCII characters without \x1c-\x1f (which Python's `\s`
//! matches and Rust's does not), the translation matches where, and captures what, Python
//! would. Anything else (lookbehind, backreferences, conditionals, possessive or atomic
//! groups, global or unknown flags, non-ASCII text in the pattern) is an error: the caller then
//! keeps Python's reader.
//!
//! Lookahead has no equivalent in `regex`, but one that nothing follows on its way to the
//! pattern's end (`x\s+(?=msg=)|...`) only decides whether its branch matches: it becomes a
//! group named `ahead.N` that consumes, and Python's match ends where that group starts
//! (see `Translated::end`).

use regex::bytes::{CaptureLocations, Regex};

/// A Python pattern translated and compiled.
#[derive(Debug, Clone)]
pub struct Translated {
    /// The compiled pattern (`(?-u)`: ASCII classes and case folding, byte subjects).
    pub regex: Regex,
    /// The group indices of the lookaheads made into groups.
    ahead: Vec<usize>,
}

impl Translated {
    /// `pattern` for `search`; `anchored`: for `match` (tried at the subject's start only).
    pub fn new(pattern: &str, anchored: bool) -> Result<Translated, String> {
        let full = regex_syntax(pattern, anchored)?;
        let regex = Regex::new(&full).map_err(|e| format!("{pattern:?}: {e}"))?;
        let ahead = regex
            .capture_names()
            .enumerate()
            .filter(|(_, n)| n.is_some_and(|n| n.starts_with(AHEAD)))
            .map(|(i, _)| i)
            .collect();
        Ok(Translated { regex, ahead })
    }

    /// The index of the group Python names `name`.
    pub fn group(&self, name: &str) -> Result<usize, String> {
        self.regex
            .capture_names()
            .position(|n| n == Some(name))
            .ok_or_else(|| format!("no group named {name:?}"))
    }

    /// Where Python's match ends: where a lookahead made into a group starts, if one took
    /// part, else where the match ends.
    pub fn end(&self, locs: &CaptureLocations) -> Option<usize> {
        for &group in &self.ahead {
            if let Some((start, _)) = locs.get(group) {
                return Some(start);
            }
        }
        locs.get(0).map(|(_, end)| end)
    }
}

/// What `Translated::new` compiles: the translation, with the flags and anchor it needs.
pub fn regex_syntax(pattern: &str, anchored: bool) -> Result<String, String> {
    let body = translate(pattern)?;
    Ok(if anchored {
        format!(r"(?-u)\A(?:{body})")
    } else {
        format!("(?-u){body}")
    })
}

/// A pattern translated when made (an error for one without an exact translation) and
/// compiled at its first use: a reader's patterns tried only on some lines (one prefix shape's
/// or server shape's branch of an alternation compiled whole) cost nothing until then.
#[derive(Debug)]
pub struct Deferred {
    pattern: String,
    anchored: bool,
    /// the translation, kept to name its groups before it is compiled
    body: String,
    compiled: std::sync::OnceLock<Option<Translated>>,
}

impl Deferred {
    /// As `Translated::new`, but compiled at the first `get`.
    pub fn new(pattern: &str, anchored: bool) -> Result<Deferred, String> {
        Ok(Deferred {
            pattern: pattern.to_string(),
            anchored,
            body: translate(pattern)?,
            compiled: std::sync::OnceLock::new(),
        })
    }

    /// Whether the pattern has a group named `name` (as `Translated::group` finds one): the
    /// translation writes `(?P<name>` for each and escapes every literal `(`, `?` and `<`.
    pub fn has_group(&self, name: &str) -> bool {
        self.body.contains(&format!("(?P<{name}>"))
    }

    /// The compiled pattern if an earlier `get` compiled it (tests: what is compiled when).
    #[cfg(test)]
    pub(crate) fn get_if_compiled(&self) -> Option<&Translated> {
        self.compiled.get()?.as_ref()
    }

    /// The compiled pattern (compiled at the first call), or None where it does not compile.
    pub fn get(&self) -> Option<&Translated> {
        let compiled = self
            .compiled
            .get_or_init(|| Translated::new(&self.pattern, self.anchored).ok());
        compiled.as_ref()
    }
}

/// The name lookaheads made into groups start with (no Python group name holds a dot).
pub(crate) const AHEAD: &str = "ahead.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Atom,
    Assert,
    Open { ahead: bool },
    Close,
    Alt,
    Quant,
}

/// The pattern in `regex` syntax (without the `(?-u)` flag), or why it has no exact equal.
pub fn translate(pattern: &str) -> Result<String, String> {
    let fail = |what: &str| format!("{pattern:?}: {what}");
    if !pattern.is_ascii() {
        return Err(fail("not ASCII"));
    }
    let p = pattern.as_bytes();
    let mut out = String::with_capacity(p.len() * 2);
    let mut toks: Vec<Tok> = Vec::new();
    let mut depth_in_ahead: Vec<bool> = Vec::new(); // per open group: inside a lookahead
    let mut aheads = 0;
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        match c {
            b'\\' => {
                let (text, tok, next) = escape(p, i, false).map_err(|e| fail(&e))?;
                text.push_onto(&mut out);
                toks.push(tok);
                i = next;
            }
            b'[' => {
                let (text, next) = class(p, i).map_err(|e| fail(&e))?;
                out.push_str(&text);
                toks.push(Tok::Atom);
                i = next;
            }
            b'(' => {
                let rest = &p[i + 1..];
                let (open, len, ahead) = if !rest.starts_with(b"?") {
                    ("(".to_string(), 1, false)
                } else if rest.starts_with(b"?:") {
                    ("(?:".to_string(), 3, false)
                } else if rest.starts_with(b"?i:") || rest.starts_with(b"?s:") {
                    (String::from_utf8_lossy(&p[i..i + 4]).into_owned(), 4, false)
                } else if rest.starts_with(b"?P<") {
                    let end = match rest.iter().position(|&b| b == b'>') {
                        Some(end) => end,
                        None => return Err(fail("unterminated group name")),
                    };
                    let name = &rest[3..end];
                    let ok = !name.is_empty()
                        && !name[0].is_ascii_digit()
                        && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
                    if !ok {
                        return Err(fail("group name"));
                    }
                    let name = String::from_utf8_lossy(name);
                    (format!("(?P<{name}>"), end + 2, false)
                } else if rest.starts_with(b"?=") {
                    if depth_in_ahead.iter().any(|&a| a) {
                        return Err(fail("a lookahead inside a lookahead"));
                    }
                    aheads += 1;
                    (format!("(?P<{AHEAD}{}>", aheads - 1), 3, true)
                } else {
                    return Err(fail("a group kind with no exact equivalent"));
                };
                out.push_str(&open);
                toks.push(Tok::Open { ahead });
                depth_in_ahead.push(ahead);
                i += len;
            }
            b')' => {
                if depth_in_ahead.pop().is_none() {
                    return Err(fail("unbalanced )"));
                }
                out.push(')');
                toks.push(Tok::Close);
                i += 1;
            }
            b'|' => {
                out.push('|');
                toks.push(Tok::Alt);
                i += 1;
            }
            b'^' | b'$' => {
                out.push(c as char);
                toks.push(Tok::Assert);
                i += 1;
            }
            b'.' => {
                out.push('.');
                toks.push(Tok::Atom);
                i += 1;
            }
            b'*' | b'+' | b'?' => {
                out.push(c as char);
                i += 1;
                i = quantifier_tail(p, i, &mut out).map_err(|e| fail(&e))?;
                toks.push(Tok::Quant);
            }
            b'{' => match repeat(p, i) {
                Some((text, next)) => {
                    out.push_str(&text);
                    i = quantifier_tail(p, next, &mut out).map_err(|e| fail(&e))?;
                    toks.push(Tok::Quant);
                }
                None => {
                    push_hex(&mut out, c); // not a repeat: Python reads a literal `{`
                    toks.push(Tok::Atom);
                    i += 1;
                }
            },
            _ => {
                push_literal(&mut out, c);
                toks.push(Tok::Atom);
                i += 1;
            }
        }
    }
    if !depth_in_ahead.is_empty() {
        return Err(fail("unbalanced ("));
    }
    for (at, tok) in toks.iter().enumerate() {
        if *tok == (Tok::Open { ahead: true }) && !nothing_follows(&toks, at) {
            return Err(fail("a lookahead that something follows"));
        }
    }
    Ok(out)
}

/// Whether, after the group opened at `toks[at]`, nothing is matched or asserted on any way
/// to the pattern's end, and no quantifier repeats the group or one around it.
fn nothing_follows(toks: &[Tok], at: usize) -> bool {
    let close = at_close(toks, at);
    if toks.get(close + 1) == Some(&Tok::Quant) {
        return false; // the lookahead itself repeated
    }
    let mut k = close + 1;
    while k < toks.len() {
        match toks[k] {
            Tok::Close => {
                if toks.get(k + 1) == Some(&Tok::Quant) {
                    return false;
                }
                k += 1;
            }
            // another branch of an enclosing group: skip to that group's end
            Tok::Alt => {
                let mut depth = 0usize;
                k += 1;
                while k < toks.len() {
                    match toks[k] {
                        Tok::Open { .. } => depth += 1,
                        Tok::Close if depth == 0 => break,
                        Tok::Close => depth -= 1,
                        _ => {}
                    }
                    k += 1;
                }
            }
            _ => return false,
        }
    }
    true
}

/// The index of the Close ending the group opened at `toks[at]`.
fn at_close(toks: &[Tok], at: usize) -> usize {
    let mut depth = 0usize;
    for (k, tok) in toks.iter().enumerate().skip(at) {
        match tok {
            Tok::Open { .. } => depth += 1,
            Tok::Close => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// After a quantifier: `?` (lazy) is kept; `+` (possessive) has no equivalent.
fn quantifier_tail(p: &[u8], i: usize, out: &mut String) -> Result<usize, String> {
    match p.get(i) {
        Some(b'?') => {
            out.push('?');
            Ok(i + 1)
        }
        Some(b'+') => Err("a possessive quantifier".to_string()),
        _ => Ok(i),
    }
}

/// A `{m}`, `{m,}`, `{,n}`, `{m,n}` repeat at `p[i]`, as Python reads one: its translation and
/// the index after it; None when the brace is a literal.
fn repeat(p: &[u8], i: usize) -> Option<(String, usize)> {
    let close = i + p[i..].iter().position(|&b| b == b'}')?;
    let inner = std::str::from_utf8(&p[i + 1..close]).ok()?;
    let (low, high) = match inner.split_once(',') {
        Some((low, high)) => (low, Some(high)),
        None => (inner, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(low) || !high.is_none_or(digits) || (low.is_empty() && high.is_none()) {
        return None;
    }
    let low = if low.is_empty() { "0" } else { low };
    let text = match high {
        None => format!("{{{low}}}"),
        Some(high) => format!("{{{low},{high}}}"),
    };
    Some((text, close + 1))
}

/// A literal character, hex-escaped unless a letter or digit (so no byte means syntax),
/// written onto `out`: a translation writes one per character of its pattern, and a `String`
/// made for each cost more than the rest of translating.
fn push_literal(out: &mut String, c: u8) {
    if c.is_ascii_alphanumeric() {
        out.push(c as char);
    } else {
        push_hex(out, c);
    }
}

/// `\xHH` (upper-case hex digits) onto `out`.
fn push_hex(out: &mut String, c: u8) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.push_str(r"\x");
    out.push(char::from(DIGITS[usize::from(c >> 4)]));
    out.push(char::from(DIGITS[usize::from(c & 0xF)]));
}

/// One character's translation, written by `push_onto` (no `String` made for it).
#[derive(Clone, Copy)]
enum Piece {
    /// a backslash and the byte (`\s`, `\b`)
    Escaped(u8),
    /// `\xHH`
    Hex(u8),
    /// a letter or digit as it is, any other byte hex-escaped
    Literal(u8),
    /// Python's `\Z`
    EndOfText,
}

impl Piece {
    fn push_onto(self, out: &mut String) {
        match self {
            Piece::Escaped(c) => {
                out.push('\\');
                out.push(char::from(c));
            }
            Piece::Hex(c) => push_hex(out, c),
            Piece::Literal(c) => push_literal(out, c),
            Piece::EndOfText => out.push_str(r"\z"),
        }
    }
}

/// The escape at `p[i]` (a backslash): its translation, what it is, and the index after it.
/// `in_class`: inside `[...]`, where `\b` is a backspace.
fn escape(p: &[u8], i: usize, in_class: bool) -> Result<(Piece, Tok, usize), String> {
    let Some(&c) = p.get(i + 1) else {
        return Err("a trailing backslash".to_string());
    };
    let same = |tok| Ok((Piece::Escaped(c), tok, i + 2));
    match c {
        b'd' | b'D' | b'w' | b'W' | b's' | b'S' => same(Tok::Atom),
        b'n' | b't' | b'r' | b'f' | b'v' | b'a' => same(Tok::Atom),
        b'b' if in_class => Ok((Piece::Hex(8), Tok::Atom, i + 2)),
        b'b' | b'B' | b'A' if !in_class => same(Tok::Assert),
        b'Z' if !in_class => Ok((Piece::EndOfText, Tok::Assert, i + 2)),
        b'x' => {
            let digits = p.get(i + 2..i + 4).ok_or("a short \\x escape")?;
            let text = std::str::from_utf8(digits).map_err(|e| e.to_string())?;
            let value = u8::from_str_radix(text, 16).map_err(|_| "a bad \\x escape")?;
            if !value.is_ascii() || !digits.iter().all(u8::is_ascii_hexdigit) {
                return Err("a \\x escape past ASCII".to_string());
            }
            Ok((Piece::Hex(value), Tok::Atom, i + 4))
        }
        c if c.is_ascii_alphanumeric() => Err(format!("the escape \\{}", c as char)),
        c => Ok((Piece::Hex(c), Tok::Atom, i + 2)),
    }
}

/// The class starting at `p[i]` (`[`), as Python reads it: its translation (every member
/// spelled out, so nothing reads as `regex`'s nested classes or set operations) and the index
/// after it.
pub(crate) fn class(p: &[u8], i: usize) -> Result<(String, usize), String> {
    let mut out = String::from("[");
    let mut k = i + 1;
    if p.get(k) == Some(&b'^') {
        out.push('^');
        k += 1;
    }
    let first = k;
    // one member: (its translation, its byte when it is a single character)
    let member = |k: usize| -> Result<(Piece, Option<u8>, usize), String> {
        match p.get(k) {
            None => Err("an unterminated class".to_string()),
            Some(b'\\') => {
                let (text, _, next) = escape(p, k, true)?;
                let single = match p[k + 1] {
                    b'd' | b'D' | b'w' | b'W' | b's' | b'S' => None,
                    // two hex digits (checked by `escape`)
                    b'x' => std::str::from_utf8(&p[k + 2..k + 4])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok()),
                    b'n' => Some(b'\n'),
                    b't' => Some(b'\t'),
                    b'r' => Some(b'\r'),
                    b'f' => Some(0x0C),
                    b'v' => Some(0x0B),
                    b'a' => Some(0x07),
                    b'b' => Some(0x08),
                    c => Some(c),
                };
                Ok((text, single, next))
            }
            Some(&c) => Ok((Piece::Literal(c), Some(c), k + 1)),
        }
    };
    loop {
        match p.get(k) {
            None => return Err("an unterminated class".to_string()),
            Some(b']') if k > first => {
                out.push(']');
                return Ok((out, k + 1));
            }
            _ => {}
        }
        let (text, single, next) = member(k)?;
        // a range: `a-z` (a `-` before the closing `]` is a literal)
        if p.get(next) == Some(&b'-') && p.get(next + 1).is_some_and(|&b| b != b']') {
            let (high_text, high, after) = member(next + 1)?;
            match (single, high) {
                (Some(low), Some(high)) if low <= high => {
                    text.push_onto(&mut out);
                    out.push('-');
                    high_text.push_onto(&mut out);
                    k = after;
                    continue;
                }
                _ => return Err("a bad class range".to_string()),
            }
        }
        text.push_onto(&mut out);
        k = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is(pattern: &str, subject: &str) -> Option<(usize, usize)> {
        let t = Translated::new(pattern, false).unwrap();
        let mut locs = t.regex.capture_locations();
        t.regex.captures_read(&mut locs, subject.as_bytes())?;
        Some((locs.get(0).unwrap().0, t.end(&locs).unwrap()))
    }

    #[test]
    fn translates_what_has_an_exact_equal() {
        assert_eq!(translate(r"a\d+\.b").unwrap(), r"a\d+\x2Eb");
        assert_eq!(translate(r"[\w.-]").unwrap(), r"[\w\x2E\x2D]");
        assert_eq!(translate(r"[^\]]").unwrap(), r"[^\x5D]");
        assert_eq!(translate(r"[]a]").unwrap(), r"[\x5Da]");
        assert_eq!(translate(r"[a-z&&[]").unwrap(), r"[a-z\x26\x26\x5B]");
        assert_eq!(translate(r"\d{4}x{2,}y{,3}").unwrap(), r"\d{4}x{2,}y{0,3}");
        assert_eq!(translate(r"a{b").unwrap(), r"a\x7Bb");
        assert_eq!(
            translate(r"(?P<ts>a)(?:b)(?i:c)\Z").unwrap(),
            r"(?P<ts>a)(?:b)(?i:c)\z"
        );
        assert_eq!(translate(r"\<x\>").unwrap(), r"\x3Cx\x3E");
        assert_eq!(translate(r"[\b]").unwrap(), r"[\x08]");
    }

    #[test]
    fn refuses_what_has_none() {
        for p in [
            r"(?<=a)b",
            r"(?<!a)b",
            r"(?!a)b",
            r"(a)\1",
            r"(?P=x)",
            r"(?i)a",
            r"(?m:a)",
            r"(?>a)",
            r"a*+",
            r"\u00e9",
            "é",
            r"(?=a)b",
            r"(?:a(?=b))+",
            r"(?:a(?=b)|c)d",
            r"a(?=b)*",
            r"a(?=b)$",
            r"(?=a(?=b))",
            r"[z-a]",
            r"[\d-z]",
            r"\x80",
            r"\q",
            "(?#c)",
        ] {
            assert!(translate(p).is_err(), "{p}");
        }
    }

    #[test]
    fn a_lookahead_nothing_follows_ends_the_match_where_it_starts() {
        assert_eq!(is(r"^x\s+(?=msg=)|^y", "x  msg=1"), Some((0, 3)));
        assert_eq!(is(r"^x\s+(?=msg=)|^x", "x  ms"), Some((0, 1)));
        assert_eq!(is(r"(?:^a|(?P<b>b)(?=c))", "bc"), Some((0, 1)));
        assert!(translate(r"(?:a|b(?=c))").is_ok());
    }

    #[test]
    fn a_deferred_pattern_names_its_groups_before_it_compiles() {
        let d = Deferred::new(r"(?P<ts>\d+)\(\?P<fake>[(?P<no>]|(?=x)", true).unwrap();
        assert!(d.has_group("ts"));
        assert!(d.has_group("ahead.0"));
        // literal text that reads like a group is escaped by the translation
        assert!(!d.has_group("fake") && !d.has_group("no") && !d.has_group("t"));
        assert!(d.compiled.get().is_none());
        let t = d.get().unwrap();
        assert_eq!(t.group("ts"), Ok(1));
        assert!(t.regex.is_match(b"12(?P<fake>("));
        assert!(Deferred::new(r"(?<!a)b", false).is_err());
    }

    #[test]
    fn anchored_is_pythons_match() {
        let t = Translated::new(r"b|^a", true).unwrap();
        assert!(t.regex.is_match(b"ab"));
        assert!(!t.regex.is_match(b"cb"));
    }
}

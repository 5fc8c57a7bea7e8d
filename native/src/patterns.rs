//! Python patterns reshaped before they are translated (crate::pyre): for subjects of ASCII
//! characters only, cut into their top-level branches, with their lookarounds taken out; and
//! what is compiled of a set of patterns, made once per process and shared.

use crate::pyre::class;

/// `pattern` for subjects of ASCII characters only: each character past ASCII, which such a
/// subject never holds, made a class that matches nothing there (`[^\x00-\x7f]`; inside a
/// class, left out of it). Not translated: pass the result to `translate`. An error where that
/// would not be exact: under case folding (Python folds the Kelvin sign to `k`), or a range
/// with an end past ASCII.
pub fn for_ascii_subjects(pattern: &str) -> Result<String, String> {
    if pattern.is_ascii() {
        return Ok(pattern.to_string());
    }
    let fail = |what: &str| format!("{pattern:?}: {what}");
    if pattern.contains("(?i") {
        return Err(fail("case folding with characters past ASCII"));
    }
    const NOTHING: &str = r"[^\x00-\x7f]";
    let c: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => {
                let next = *c.get(i + 1).ok_or_else(|| fail("a trailing backslash"))?;
                if !next.is_ascii() {
                    return Err(fail("an escaped character past ASCII"));
                }
                out.push('\\');
                out.push(next);
                i += 2;
            }
            '[' => {
                let mut k = i + 1;
                let negated = c.get(k) == Some(&'^');
                if negated {
                    k += 1;
                }
                let first = k;
                let mut kept = String::new();
                loop {
                    let m = *c.get(k).ok_or_else(|| fail("an unterminated class"))?;
                    if m == ']' && k > first {
                        break;
                    }
                    if m == '\\' {
                        let next = *c.get(k + 1).ok_or_else(|| fail("a trailing backslash"))?;
                        if !next.is_ascii() {
                            return Err(fail("an escaped character past ASCII"));
                        }
                        kept.push('\\');
                        kept.push(next);
                        k += 2;
                    } else if m.is_ascii() {
                        kept.push(m);
                        k += 1;
                    } else {
                        let beside = [c.get(k + 1), k.checked_sub(1).and_then(|j| c.get(j))];
                        if beside.contains(&Some(&'-')) {
                            return Err(fail("a class range past ASCII"));
                        }
                        k += 1;
                    }
                }
                match (negated, kept.is_empty()) {
                    (false, true) => out.push_str(NOTHING),
                    (true, true) => out.push_str(r"[\x00-\x7f]"),
                    (false, false) => out.push_str(&format!("[{kept}]")),
                    (true, false) => out.push_str(&format!("[^{kept}]")),
                }
                i = k + 1;
            }
            ch if !ch.is_ascii() => {
                out.push_str(NOTHING);
                i += 1;
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The branches of `pattern`'s top-level alternation (`a|b(c|d)|e` -> `a`, `b(c|d)`, `e`), as
/// Python reads its classes and escapes: the pattern itself when it has one branch.
pub fn branches(pattern: &str) -> Result<Vec<String>, String> {
    let fail = |what: &str| format!("{pattern:?}: {what}");
    if !pattern.is_ascii() {
        return Err(fail("not ASCII"));
    }
    let p = pattern.as_bytes();
    let (mut out, mut depth, mut start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < p.len() {
        match p[i] {
            b'\\' => i += 2,
            b'[' => i = class(p, i).map_err(|e| fail(&e))?.1,
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.checked_sub(1).ok_or_else(|| fail("unbalanced )"))?;
                i += 1;
            }
            b'|' if depth == 0 => {
                out.push(pattern[start..i].to_string());
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if depth != 0 || i > p.len() {
        return Err(fail("unbalanced ( or a trailing backslash"));
    }
    out.push(pattern[start..].to_string());
    Ok(out)
}

/// The value made of `key` by `make`, made once per process and shared by every reader made of
/// the same patterns (the extractor's line reader and its first pass both read lines with the
/// anatomy's, and compiling them costs milliseconds); a failure to make is not kept.
pub fn shared<T: Send + Sync + 'static>(
    key: &str,
    make: impl FnOnce() -> Option<T>,
) -> Option<std::sync::Arc<T>> {
    use std::any::{Any, TypeId};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Made = HashMap<(TypeId, String), Arc<dyn Any + Send + Sync>>;
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    let made = MADE.get_or_init(|| Mutex::new(HashMap::new()));
    let id = (TypeId::of::<T>(), key.to_string());
    if let Some(found) = made.lock().ok()?.get(&id) {
        return Arc::clone(found).downcast::<T>().ok();
    }
    let value = Arc::new(make()?);
    let mut made = made.lock().ok()?;
    let kept = made.entry(id).or_insert_with(|| value.clone());
    Arc::clone(kept).downcast::<T>().ok()
}

/// `pattern` with every lookaround group (`(?=..)`, `(?!..)`, `(?<=..)`, `(?<!..)`) taken
/// out: a pattern that matches wherever `pattern` does, and maybe elsewhere (an assertion only
/// ever refuses). Not translated: pass the result to `translate`.
pub fn without_lookaround(pattern: &str) -> Result<String, String> {
    let fail = |what: &str| format!("{pattern:?}: {what}");
    let p = pattern.as_bytes();
    let mut out = String::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let next = skip_atom(p, i).map_err(|e| fail(&e))?;
        if !lookaround_at(p, i) {
            out.push_str(&pattern[i..next]);
        }
        i = next;
    }
    Ok(out)
}

fn lookaround_at(p: &[u8], i: usize) -> bool {
    let rest = &p[i..];
    [&b"(?="[..], b"(?!", b"(?<=", b"(?<!"]
        .iter()
        .any(|open| rest.starts_with(open))
}

/// The index after what starts at `p[i]`: an escape, a class, a whole lookaround group, or
/// one character (a group's other parts are kept one character at a time). A character is
/// all of its UTF-8 bytes: the caller slices the pattern there.
fn skip_atom(p: &[u8], i: usize) -> Result<usize, String> {
    match p[i] {
        b'\\' if i + 1 < p.len() => Ok(i + 1 + utf8_len(p[i + 1])),
        b'\\' => Err("a trailing backslash".to_string()),
        b'[' => class(p, i).map(|(_, next)| next),
        b'(' if lookaround_at(p, i) => {
            let mut k = i + 1;
            while k < p.len() {
                match p[k] {
                    b')' => return Ok(k + 1),
                    b'(' if lookaround_at(p, k) => k = skip_atom(p, k)?,
                    b'(' => k = group_end(p, k)?,
                    _ => k = skip_atom(p, k)?,
                }
            }
            Err("unbalanced (".to_string())
        }
        lead => Ok(i + utf8_len(lead)),
    }
}

/// How many bytes the UTF-8 character that `lead` begins takes (1 for ASCII).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

/// The index after the group opened at `p[i]`.
fn group_end(p: &[u8], i: usize) -> Result<usize, String> {
    let mut k = i + 1;
    while k < p.len() {
        match p[k] {
            b')' => return Ok(k + 1),
            b'(' => k = group_end(p, k)?,
            _ => k = skip_atom(p, k)?,
        }
    }
    Err("unbalanced (".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyre::Translated;

    #[test]
    fn lookarounds_taken_out() {
        let cases = [
            (r"a(?!\s*b\b)", r"a"),
            (r"(?<![;,.:]\s)(?<![;,.:])x|y(?=z)", r"x|y"),
            (r"a(?=(b)|[)(])c", r"ac"),
            (r"[(?=]\(?=x", r"[(?=]\(?=x"),
            (r"(?:a(?!b(?=c)))", r"(?:a)"),
        ];
        for (pattern, relaxed) in cases {
            assert_eq!(without_lookaround(pattern).unwrap(), relaxed, "{pattern}");
        }
        assert!(without_lookaround(r"a(?!b").is_err());
    }

    #[test]
    fn lookarounds_taken_out_around_characters_past_ascii() {
        // sliced on a character's boundary, not a byte's (it panicked on `é(?=x)`)
        let cases = [
            ("é(?=x)", "é"),
            ("x(?!é)ü", "xü"),
            (r"\é(?<=a)—", r"\é—"),
            ("[é─](?=b)𝄞", "[é─]𝄞"),
        ];
        for (pattern, relaxed) in cases {
            assert_eq!(without_lookaround(pattern).unwrap(), relaxed, "{pattern}");
        }
    }

    #[test]
    fn characters_past_ascii_match_nothing_on_ascii_subjects() {
        let cases = [
            ("a─*b", r"a[^\x00-\x7f]*b"),
            ("[╭┌][─ ]*x", r"[^\x00-\x7f][ ]*x"),
            (r#"[^\s"│]+"#, r#"[^\s"]+"#),
            ("[^│]", r"[\x00-\x7f]"),
            (r"[\]│]", r"[\]]"),
            ("plain", "plain"),
        ];
        for (pattern, relaxed) in cases {
            assert_eq!(for_ascii_subjects(pattern).unwrap(), relaxed, "{pattern}");
        }
        for pattern in ["(?i:é)", "[a-é]", "[é-z]", "\\é", "[\\é]", "[é"] {
            assert!(for_ascii_subjects(pattern).is_err(), "{pattern}");
        }
        let t = Translated::new(&for_ascii_subjects("^(?:x|[│╭])y").unwrap(), true).unwrap();
        assert!(t.regex.is_match(b"xy"));
        assert!(!t.regex.is_match(b"y"));
        let t = Translated::new(&for_ascii_subjects("^[^│]$").unwrap(), true).unwrap();
        assert!(t.regex.is_match(b"a"));
    }

    #[test]
    fn branches_at_the_top_level_only() {
        let b = branches(r"a|b(c|d)|[|]\||e").unwrap();
        assert_eq!(b, vec!["a", "b(c|d)", r"[|]\|", "e"]);
        assert_eq!(branches("x").unwrap(), vec!["x"]);
        assert_eq!(branches(r"[]|]|y").unwrap(), vec!["[]|]", "y"]);
        assert!(branches("(a|b").is_err());
        assert!(branches("a)|b").is_err());
    }

    #[test]
    fn made_once_per_key_and_a_failure_not_kept() {
        let a = shared("pyre-test-key", || Some(String::from("a"))).unwrap();
        let b = shared("pyre-test-key", || -> Option<String> {
            panic!("made twice")
        })
        .unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert!(shared::<u8>("pyre-test-none", || None).is_none());
        assert_eq!(shared("pyre-test-none", || Some(3u8)).as_deref(), Some(&3));
        assert_eq!(shared("pyre-test-key", || Some(7u8)).as_deref(), Some(&7)); // its own type
    }
}

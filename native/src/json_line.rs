//! One JSON object on one line (a journald, Vector, Promtail or Fluent Bit record), read as
//! Python's `json.loads` reads it, for the fields the unwrapper asks about; None for anything
//! it does not read exactly as Python does (NaN, deep nesting, a lone surrogate, an array of
//! anything but small integers), which Python then reads itself.

/// A field's value, as far as the unwrapper needs it.
#[derive(Debug, PartialEq, Eq)]
pub enum Value {
    Text(Vec<u8>),          // a string, decoded (UTF-8)
    Int(Option<i64>),       // an integer; None when below 0 or from 10**18 up
    Bytes(Option<Vec<u8>>), // an array; its bytes when every item is an integer 0..=255
    Other,                  // a fraction, true, false, null, an object
}

/// The fields of a flat JSON object line, in order (a repeated key: the last one counts, as
/// for Python's dict).
pub fn fields(line: &[u8]) -> Option<Vec<(Vec<u8>, Value)>> {
    std::str::from_utf8(line).ok()?;
    let mut s = skip_space(line.strip_prefix(b"{")?);
    let mut out = Vec::new();
    if let Some(rest) = s.strip_prefix(b"}") {
        return end(rest).then_some(out);
    }
    loop {
        let mut key = Vec::new();
        s = json_string(s.strip_prefix(b"\"")?, &mut key)?;
        s = skip_space(skip_space(s).strip_prefix(b":")?);
        let (value, rest) = value(s, 0)?;
        out.push((key, value));
        s = skip_space(rest);
        if let Some(rest) = s.strip_prefix(b",") {
            s = skip_space(rest);
            continue;
        }
        return end(s.strip_prefix(b"}")?).then_some(out);
    }
}

/// The last value of `key`.
pub fn get<'a>(fields: &'a [(Vec<u8>, Value)], key: &str) -> Option<&'a Value> {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == key.as_bytes())
        .map(|(_, v)| v)
}

fn end(rest: &[u8]) -> bool {
    skip_space(rest).is_empty()
}

fn skip_space(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    &s[n..]
}

const MAX_DEPTH: usize = 64; // deeper: left to Python (whose limit is the recursion's)

fn value(s: &[u8], depth: usize) -> Option<(Value, &[u8])> {
    if depth > MAX_DEPTH {
        return None;
    }
    match *s.first()? {
        b'"' => {
            let mut text = Vec::new();
            let rest = json_string(&s[1..], &mut text)?;
            Some((Value::Text(text), rest))
        }
        b'[' => array(&s[1..], depth),
        b'{' => object(&s[1..], depth).map(|rest| (Value::Other, rest)),
        b't' => Some((Value::Other, s.strip_prefix(b"true")?)),
        b'f' => Some((Value::Other, s.strip_prefix(b"false")?)),
        b'n' => Some((Value::Other, s.strip_prefix(b"null")?)),
        b'-' | b'0'..=b'9' => number(s),
        _ => None, // NaN, Infinity: Python's json reads them; left to it
    }
}

/// `-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`, as Python's json scanner matches a number.
fn number(s: &[u8]) -> Option<(Value, &[u8])> {
    let digits = |t: &[u8]| t.iter().take_while(|b| b.is_ascii_digit()).count();
    let negative = s[0] == b'-';
    let body = &s[usize::from(negative)..];
    let whole = digits(body);
    if whole == 0 || (body[0] == b'0' && whole > 1) {
        return None;
    }
    let mut rest = &body[whole..];
    let mut integer = true;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = digits(fraction);
        if n == 0 {
            return None;
        }
        rest = &fraction[n..];
        integer = false;
    }
    if let Some(exponent) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let exponent = exponent
            .strip_prefix(b"+")
            .or_else(|| exponent.strip_prefix(b"-"))
            .unwrap_or(exponent);
        let n = digits(exponent);
        if n == 0 {
            return None;
        }
        rest = &exponent[n..];
        integer = false;
    }
    if !integer {
        return Some((Value::Other, rest));
    }
    let below_zero = negative && body[..whole].iter().any(|&b| b != b'0');
    let pid = if below_zero || whole > 18 {
        None
    } else {
        std::str::from_utf8(&body[..whole]).ok()?.parse().ok()
    };
    Some((Value::Int(pid), rest))
}

fn array(mut s: &[u8], depth: usize) -> Option<(Value, &[u8])> {
    let mut bytes = Some(Vec::new());
    s = skip_space(s);
    if let Some(rest) = s.strip_prefix(b"]") {
        return Some((Value::Bytes(bytes), rest));
    }
    loop {
        let (item, rest) = value(s, depth + 1)?;
        match item {
            Value::Int(Some(b)) if b < 256 => {
                if let Some(bytes) = bytes.as_mut() {
                    bytes.push(b as u8);
                }
            }
            Value::Other => return None, // true counts as 1 in Python: left to it
            _ => bytes = None,
        }
        s = skip_space(rest);
        if let Some(rest) = s.strip_prefix(b",") {
            s = skip_space(rest);
            continue;
        }
        return Some((Value::Bytes(bytes), s.strip_prefix(b"]")?));
    }
}

fn object(mut s: &[u8], depth: usize) -> Option<&[u8]> {
    s = skip_space(s);
    if let Some(rest) = s.strip_prefix(b"}") {
        return Some(rest);
    }
    loop {
        let mut key = Vec::new();
        s = json_string(s.strip_prefix(b"\"")?, &mut key)?;
        s = skip_space(skip_space(s).strip_prefix(b":")?);
        let (_, rest) = value(s, depth + 1)?;
        s = skip_space(rest);
        if let Some(rest) = s.strip_prefix(b",") {
            s = skip_space(rest);
            continue;
        }
        return s.strip_prefix(b"}");
    }
}

/// The JSON string at the start of `s` (after its opening quote) decoded into `out`, as
/// Python's json decodes it; the rest of `s` after the closing quote.
pub(crate) fn json_string<'a>(s: &'a [u8], out: &mut Vec<u8>) -> Option<&'a [u8]> {
    let mut i = 0;
    loop {
        let run = s[i..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        out.extend_from_slice(&s[i..i + run]);
        i += run;
        match s[i] {
            b'"' => return Some(&s[i + 1..]),
            b'\\' => {
                let escape = *s.get(i + 1)?;
                i += 2;
                let byte = match escape {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        let (c, used) = unicode_escape(&s[i..])?;
                        i += used;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        continue;
                    }
                    _ => return None,
                };
                out.push(byte);
            }
            _ => return None, // a raw control character: Python's json refuses the line
        }
    }
}

/// The character of `\uXXXX` (after `\u`), a surrogate pair joined; None for a lone surrogate
/// (Python keeps it and writes it as `?`: left to Python); and the bytes it took.
fn unicode_escape(s: &[u8]) -> Option<(char, usize)> {
    let first = hex4(s)?;
    if !(0xD800..0xE000).contains(&first) {
        return Some((char::from_u32(first)?, 4));
    }
    if first >= 0xDC00 {
        return None;
    }
    let low = hex4(s.get(4..)?.strip_prefix(b"\\u")?)?;
    if !(0xDC00..0xE000).contains(&low) {
        return None;
    }
    let c = 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
    Some((char::from_u32(c)?, 10))
}

fn hex4(s: &[u8]) -> Option<u32> {
    let digits = s.get(..4)?;
    digits.iter().try_fold(0u32, |value, &b| {
        Some(value * 16 + char::from(b).to_digit(16)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_python_reads() {
        let line = br#"{"MESSAGE":"a\u0041","_PID":"12","n":-0,"big":10000000000000000000,"b":[104,105],"o":{"x":[1,2],"y":{"z":null}},"f":1.5e3,"MESSAGE":[104,105]} "#;
        let f = fields(line).unwrap();
        assert_eq!(
            get(&f, "MESSAGE"),
            Some(&Value::Bytes(Some(b"hi".to_vec())))
        );
        assert_eq!(get(&f, "_PID"), Some(&Value::Text(b"12".to_vec())));
        assert_eq!(get(&f, "n"), Some(&Value::Int(Some(0))));
        assert_eq!(get(&f, "big"), Some(&Value::Int(None)));
        assert_eq!(get(&f, "f"), Some(&Value::Other));
        assert_eq!(get(&f, "o"), Some(&Value::Other));
    }

    #[test]
    fn declines_what_python_reads_another_way_or_refuses() {
        for line in [
            &br#"{"a":NaN}"#[..],
            br#"{"a":01}"#,
            br#"{"a":1.}"#,
            br#"{"a":[true]}"#,
            br#"{"a":"x"} x"#,
            br#"{"a":"x",}"#,
            br#"{"a" "x"}"#,
            br#"{"a":"\ud800"}"#,
        ] {
            assert_eq!(fields(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}

//! The line shapes and a stamp's words as the examples take them (one a line, as `SHAPES_CODE`
//! prints them), and the core they build with the package's default bounds.

use _native::anchors::{Counts, Shape};
use _native::core::Core;
use _native::stamps::StampWords;

/// A core with scan's default bounds (3 KiB before a hit, 1 KiB after, 4 MiB lines, 1 MiB
/// windows, id lines on).
pub fn core<A: AsRef<[u8]>>(
    anchors: &[A],
    markup_line: &str,
    (shapes, stamps): &(Vec<Shape>, StampWords),
) -> Core {
    Core::new(
        anchors,
        markup_line,
        shapes,
        3072,
        1024,
        4 << 20,
        1 << 20,
        true,
        stamps.clone(),
    )
    .unwrap()
}

/// Python printing the checkout's `LINE_SHAPES` in the form `parse` reads: per shape a line of
/// tab-separated fields (counts, literals, words, blanks 0 or 1, then, line regex), bytes in
/// hex, a field's items apart by commas.
pub const SHAPES_CODE: &str = "from harmony_doctor.scan.core import LINE_SHAPES\n\
     from harmony_doctor.inputs.log_words import LEVELS, PID_KEY\n\
     print('\\t'.join(['stamps', ','.join(LEVELS), PID_KEY]))\n\
     for s in LINE_SHAPES:\n\
     \x20   print('\\t'.join([s.counts, ','.join(x.hex() for x in s.literals), \
     ','.join(x.hex() for x in s.words), '1' if s.blanks else '0', s.then.hex(), \
     (s.line or b'').hex()]))";

fn hex(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The shapes and the stamp's words of `text`, as `SHAPES_CODE` prints them.
pub fn parse(text: &str) -> (Vec<Shape>, StampWords) {
    let items = |f: &str| f.split(',').map(hex).collect();
    let (first, rest) = text
        .split_once('\n')
        .expect("a stamp's words, then the shapes");
    let stamp: Vec<&str> = first.split('\t').collect();
    assert!(
        stamp.len() == 3 && stamp[0] == "stamps",
        "first the stamp's words: {first:?}"
    );
    let levels: Vec<&str> = stamp[1].split(',').collect();
    let stamps = StampWords::new(&levels, stamp[2]).expect("a stamp's words");
    let shapes = rest
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 6, "a shape has 6 fields: {line:?}");
            let regex = hex(f[5]);
            Shape {
                counts: Counts::named(f[0]).expect("counts"),
                literals: items(f[1]),
                words: items(f[2]),
                blanks: f[3] == "1",
                then: hex(f[4]),
                line: (!regex.is_empty()).then(|| String::from_utf8(regex).expect("regex")),
            }
        })
        .collect();
    (shapes, stamps)
}

//! Feed a file to the core in 1 MiB chunks and print MB/s (CPU profile target):
//! `cargo run --release --example bench -- FILE [ANCHOR...]`.
//!
//! The error anchors are the Python package's (this crate holds no failure text): without
//! ANCHOR arguments, `$PYTHON` (default `python3`) prints harmony_doctor.scan.core's
//! `ERROR_ANCHORS` from this checkout; it gives the markup-line rule `MARKUP_LINE` and the line
//! shapes `LINE_SHAPES` too.

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

#[path = "common/shapes.rs"]
mod shapes;

/// What `code` prints, run by `$PYTHON` (default `python3`) in the checkout around this crate.
fn ask_python(code: &str) -> String {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(&python)
        .current_dir(&root)
        .args(["-c", code])
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e} (pass the anchors as arguments instead)"));
    assert!(
        out.status.success(),
        "{python}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The anchors `ERROR_ANCHORS` of the checkout (hex, one per line: no quoting to undo).
fn python_anchors() -> Vec<Vec<u8>> {
    ask_python(
        "from harmony_doctor.scan.core import ERROR_ANCHORS\n\
         print('\\n'.join(a.hex() for a in ERROR_ANCHORS))",
    )
    .lines()
    .map(|hex| {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    })
    .collect()
}

/// The markup-line rule `MARKUP_LINE` of the checkout.
fn python_markup_line() -> String {
    ask_python("from harmony_doctor.scan.core import MARKUP_LINE\nprint(MARKUP_LINE.decode())")
        .trim_end()
        .to_string()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: bench FILE [ANCHOR...]");
    let mut anchors: Vec<Vec<u8>> = args.map(String::into_bytes).collect();
    if anchors.is_empty() {
        anchors = python_anchors();
    }
    let mut f = std::fs::File::open(&path).unwrap();
    let markup_line = python_markup_line();
    let line_shapes = shapes::parse(&ask_python(shapes::SHAPES_CODE));
    let mut core = shapes::core(&anchors, &markup_line, &line_shapes);
    let mut buf = vec![0u8; 1 << 20];
    let (mut windows, mut ids, mut size) = (0, 0, 0u64);
    let t0 = Instant::now();
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        size += n as u64;
        let b = core.feed(&buf[..n], &[]).unwrap();
        windows += b.windows.len();
        ids += b.id_lines.len();
    }
    let b = core.finish().unwrap();
    windows += b.windows.len();
    ids += b.id_lines.len();
    let secs = t0.elapsed().as_secs_f64();
    let s = core.stats();
    println!(
        "{:.1} MB/s {secs:.2} s windows={windows} ids={ids} lines={} access={} received={} tallies={}",
        size as f64 / 1e6 / secs,
        s.lines,
        s.access_lines,
        s.received_lines,
        s.tallies.len()
    );
}

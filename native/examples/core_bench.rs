//! The scan core alone on a plain log, for profiling (`perf record`) without Python:
//!
//!     cargo run --release --example core_bench -- LOG ANCHORS MARKUP SHAPES [REPEAT]
//!
//! ANCHORS: a file of error anchors, one a line; MARKUP: a file holding the markup-line rule;
//! SHAPES: the line shapes as examples/common/shapes.rs `SHAPES_CODE` prints them (dump them
//! from harmony_doctor/scan/core.py `ERROR_ANCHORS`, `MARKUP_LINE` and `LINE_SHAPES`). Feeds the
//! log in 1 MiB chunks on one thread and prints the best thread CPU time of REPEAT runs.

#[path = "common/shapes.rs"]
#[allow(dead_code)] // SHAPES_CODE: the file is dumped beforehand
mod shapes;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

/// This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID: the machine's load does not
/// count).
fn cpu() -> f64 {
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `t` is (Linux x86_64 layout).
    unsafe { clock_gettime(3, &mut t) };
    t.sec as f64 + t.nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: core_bench LOG ANCHORS MARKUP SHAPES [REPEAT]");
        std::process::exit(2);
    }
    let log = std::fs::read(&args[1]).expect("log");
    let anchors_text = std::fs::read(&args[2]).expect("anchors");
    let anchors: Vec<&[u8]> = anchors_text.split(|&b| b == b'\n').collect();
    let markup = std::fs::read_to_string(&args[3]).expect("markup");
    let line_shapes = shapes::parse(&std::fs::read_to_string(&args[4]).expect("shapes"));
    let repeat: usize = args.get(5).map_or(3, |r| r.parse().expect("repeat"));
    // the newlines of each chunk, counted before the clock starts: the Python side hands the
    // core its chunks' counts (the unwrapper counts them once)
    // (no month names: only the counts are wanted)
    let months = _native::chunk::Months::new::<&str>(&[]).expect("no months");
    let chunks: Vec<(&[u8], u64)> = log
        .chunks(1 << 20)
        .map(|c| (c, _native::chunk::chunk_lines(c, &months).0 as u64))
        .collect();
    let mut best = f64::MAX;
    for _ in 0..repeat {
        let mut core = shapes::core(&anchors, &markup, &line_shapes);
        core.set_split(None);
        let start = cpu();
        let (mut windows, mut ids) = (0, 0);
        for &(chunk, newlines) in &chunks {
            let b = core.feed_counted(chunk, &[], Some(newlines)).unwrap();
            windows += b.windows.len();
            ids += b.id_lines.len();
        }
        let b = core.finish().unwrap();
        windows += b.windows.len();
        ids += b.id_lines.len();
        let secs = cpu() - start;
        best = best.min(secs);
        let s = core.stats();
        eprintln!(
            "{secs:.3} s  windows {windows} ids {ids} lines {} access {} received {} tallies {}",
            s.lines,
            s.access_lines,
            s.received_lines,
            s.tallies.len()
        );
    }
    println!(
        "best {best:.3} s, {:.2} GB/s",
        log.len() as f64 / best / 1e9
    );
}

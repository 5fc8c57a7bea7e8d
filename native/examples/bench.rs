//! Feed a file to the core in 1 MiB chunks and print MB/s (CPU profile target):
//! `cargo run --release --example bench -- FILE`.

use std::io::Read;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bench FILE");
    let mut f = std::fs::File::open(&path).unwrap();
    let mut core = _native::core::Core::new(3072, 1024, 4 << 20, 1 << 20, true).unwrap();
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

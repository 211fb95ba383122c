//! Prints per-frame camera and ground truth of the bundled clip, and renders chosen frames to PNG.
//!
//! `cargo run -p heimdall-testkit --example clip_stats -- [OUT_DIR FRAME...]`

use heimdall_testkit::Clip;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/clips/astronaut_pan"
    );
    let clip = Clip::load(dir)?;
    let mut full = 0;
    let mut some = 0;
    for i in 0..clip.len() {
        let cam = clip.camera(i);
        let gt = clip.ground_truth(i);
        full += usize::from(clip.face_fully_visible(i));
        some += usize::from(gt.is_some());
        if i % 5 == 0 || !clip.face_fully_visible(i) {
            println!(
                "{i:3} c=({:6.1},{:6.1}) z={:.2} r={:5.1} full={} gt={:?}",
                cam.center.x,
                cam.center.y,
                cam.zoom,
                cam.rotation.to_degrees(),
                clip.face_fully_visible(i),
                gt.map(|r| [r.x, r.y, r.w, r.h])
            );
        }
    }
    println!(
        "fully visible {full}/{}, with ground truth {some}",
        clip.len()
    );
    let mut buf = clip.frame(0);
    let t = std::time::Instant::now();
    for i in 0..clip.len() {
        clip.frame_into(i, &mut buf);
    }
    println!(
        "mean render time over {} frames: {:?}",
        clip.len(),
        t.elapsed() / clip.len() as u32
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some((out, frames)) = args.split_first() {
        for f in frames {
            let i: usize = f.parse()?;
            let t = std::time::Instant::now();
            let img = clip.frame(i);
            let dt = t.elapsed();
            std::fs::write(format!("{out}/frame_{i:03}.png"), img.encode_png()?)?;
            println!("frame {i}: rendered in {dt:?}");
        }
    }
    Ok(())
}

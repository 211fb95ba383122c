//! Prints per-frame camera and ground truth of a bundled clip, and renders chosen frames to PNG.
//!
//! `cargo run --release -p heimdall-testkit --example clip_stats -- [--clip DIR] [OUT_DIR FRAME...]`
//! (`DIR` defaults to `assets/clips/astronaut_pan`).

use heimdall_testkit::Clip;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let dir = if args.first().map(String::as_str) == Some("--clip") {
        let dir = args.get(1).ok_or("--clip needs a directory")?.clone();
        args.drain(..2);
        dir
    } else {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/clips/astronaut_pan"
        )
        .to_string()
    };
    let clip = Clip::load(&dir)?;
    let mut full = 0;
    let mut some = 0;
    for i in 0..clip.len() {
        let cam = clip.camera(i);
        let gt = clip.ground_truth(i);
        full += usize::from(clip.face_fully_visible(i));
        some += usize::from(gt.is_some());
        if i % 5 == 0 || (clip.face_box().is_some() && !clip.face_fully_visible(i)) {
            println!(
                "{i:3} c=({:6.1},{:6.1}) z={:.2} r={:5.1} full={} gt={:?}",
                cam.center.x,
                cam.center.y,
                cam.zoom,
                cam.rotation.to_degrees(),
                clip.face_fully_visible(i),
                gt.map(|r| [r.x, r.y, r.w, r.h])
            );
            let t = clip.truth(i);
            for b in t
                .boxes
                .iter()
                .filter(|b| b.label != "face" || b.layer.is_some())
            {
                println!(
                    "      {} ({}, layer {:?}): {:?}",
                    b.label,
                    b.kind.as_str(),
                    b.layer,
                    b.rect.map(|r| [r.x, r.y, r.w, r.h])
                );
            }
            for p in &t.points {
                println!("      {} (layer {}): {:?}", p.label, p.layer, p.pos);
            }
        }
    }
    println!(
        "face fully visible {full}/{}, with ground truth {some}",
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

//! `emoji`: the AR example. The camera frame (the bundled clip by default) as background, the
//! person mask for a background effect, and an emoji on the detected face, rolled with the face
//! mesh; face detection, face mesh and selfie segmentation run continuously under heimdall's
//! coordinator on Bevy's own GPU queue.
//!
//! ```text
//! cargo run --release --example emoji                      # a window
//! cargo run --release --example emoji -- --headless --frames 300 --out out/emoji
//! ```
//! Headless runs render into an image, save every `--save-every` frame as PNG, write
//! `stats.json` (frame rate, frames on time, per-model latency) and the coordinator's Chrome
//! trace, and exit 0. See `--help` for the load and mode options.

mod scene;

use bevy::app::AppExit;

fn main() -> AppExit {
    let args = match scene::EmojiArgs::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return AppExit::error();
        }
    };
    scene::build_app(args).run()
}

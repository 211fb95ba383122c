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
//! `stats.json` and the coordinator's Chrome trace, and exit 0 (non-zero, with the reason, when
//! a model or the camera fails). `--help` lists the options.

mod scene;

use bevy::app::AppExit;
use heimdall_examples::args::AppArgs;
use heimdall_examples::{assets, harness};

/// What `--help` says the app is.
const ABOUT: &str = "The emoji AR example: the camera as background, an emoji on the detected face rolled with the face mesh, the background desaturated outside the person mask; three MediaPipe models under heimdall's coordinator.";

fn main() -> AppExit {
    let args = AppArgs::from_env("emoji", ABOUT);
    let dir = match assets::asset_dir(args.assets.as_deref())
        .and_then(|dir| assets::require(&dir, scene::ASSETS).map(|()| dir))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("emoji: {e}");
            return AppExit::error();
        }
    };
    let mut app = harness::build_app("emoji", &args, &dir);
    match scene::EmojiScene::load(&dir) {
        Ok(scene) => app.add_plugins(scene),
        Err(e) => {
            eprintln!("emoji: {e}");
            return AppExit::error();
        }
    };
    app.run()
}

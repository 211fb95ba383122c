//! `shopping`: Heimdall's "immersive online shopping" app (seed 000, Table 1). A virtual couch
//! stands on the floor of the room the camera sees, in front of the furniture the object
//! detector finds; the user drags it with a pinching hand and turns it with two; a tap (a key,
//! a click, or `--events SECONDS` in headless runs) restyles its fabric from the current camera
//! view with style transfer; people occlude it where selfie segmentation says so.
//!
//! DNNs: object detection (MediaPipe's OIDv4 SSD), selfie segmentation, hand tracking (palm
//! detection on demand and hand landmarks per hand) continuously, each with its own deadline;
//! style transfer (`multistyle26`) on demand, high priority, 100 ms deadline.
//!
//! ```text
//! cargo run --release --example shopping                      # a window
//! cargo run --release --example shopping -- --headless --frames 300 --events 2 --out out/shopping
//! ```
//! Headless runs render into an image, save every `--save-every` frame as PNG and write
//! `stats.json` (with the app's own entries: hands and objects against the clip's ground truth,
//! the style events' latency, the couch's placement) and the coordinator's trace.

mod couch;
mod interaction;
mod scene;
mod style;

use bevy::app::AppExit;
use heimdall_examples::args::AppArgs;
use heimdall_examples::{assets, harness};

/// What `--help` says the app is.
const ABOUT: &str = "The shopping AR example: a 3D couch on the floor of a room, dragged by a pinching hand and turned with two, its fabric restyled on a tap; objects, segmentation, hands and style transfer under heimdall's coordinator.";

fn main() -> AppExit {
    let args = AppArgs::from_env("shopping", ABOUT);
    let dir = match assets::asset_dir(args.assets.as_deref())
        .and_then(|dir| assets::require(&dir, scene::ASSETS).map(|()| dir))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("shopping: {e}");
            return AppExit::error();
        }
    };
    let mut app = harness::build_app("shopping", &args, &dir);
    match scene::ShoppingScene::load(&dir) {
        Ok(scene) => app.add_plugins(scene),
        Err(e) => {
            eprintln!("shopping: {e}");
            return AppExit::error();
        }
    };
    app.run()
}

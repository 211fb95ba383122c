//! MediaPipe's hand tracking (`hand_landmark_tracking_cpu`): palm detection
//! ([`heimdall_vision::hands::palm_decoder`]) into [`PalmDetections`] and hand ROIs, and the
//! landmark model ([`heimdall_vision::hands::decode_hand_landmarks`]) into a [`TrackedHand`]
//! per hand, each hand's next crop made from its landmarks
//! ([`heimdall_vision::hands::landmarks_to_roi`]).
//!
//! A landmark DNN takes one crop per inference, so each tracked hand is its own landmark DNN
//! entity, cropping its own [`RegionOfInterest`] (`InputCrop::Roi(itself)`): the palm decoder
//! gives a free hand entity a palm's ROI, the landmark decoder replaces it with the ROI of its
//! landmarks (tracking) or removes it when the hand is lost (presence < 0.5). The palm DNN
//! ([`RequestMode::OnDemand`](crate::dnn::RequestMode)) runs only while a hand entity has no ROI
//! (fewer hands tracked than wanted), requested by [`HandTrackingPlugin`]: every frame while no
//! hand is tracked, at most every [`HandTracking::search_interval`] while one is; palms overlapping a
//! tracked hand (IoU > 0.5) are left to it, as MediaPipe's `AssociationNormRectCalculator`
//! does, and of two tracked hands that overlap the later one is dropped.
//! [`spawn_hand_tracking`] spawns the whole set.

use std::time::Duration;

use bevy::prelude::*;
use heimdall_vision::hands::tracker::associate_rois;
use heimdall_vision::hands::{
    HAND_LANDMARK_INPUT, HandLandmarks, decode_hand_landmarks, hand_landmark_crop,
    landmarks_to_roi, palm_decoder, palm_to_roi,
};
use heimdall_vision::image::{ImageToTensor, RotatedRect};
use heimdall_vision::{Detection, Normalization, SsdDecoder};

use crate::HeimdallSystems;
use crate::asset::DnnModel;
use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};
use crate::dnn::{Dnn, InputCrop, RegionOfInterest, RequestInference, RequestMode};

/// The latest palms of a palm detector (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct PalmDetections {
    /// Camera frame they were computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Size of that frame, pixels.
    pub frame_size: UVec2,
    /// Palms in frame uv (box and 7 keypoints), best first.
    pub palms: Vec<Detection>,
    /// The hand landmark ROI of each palm (frame uv), in the same order.
    pub rois: Vec<RotatedRect>,
}

/// How often palm detection looks for more hands while at least one hand is tracked, by
/// default ([`HandTracking::search_interval`]).
pub const DEFAULT_SEARCH_INTERVAL: Duration = Duration::from_millis(100);

/// The hand landmark DNNs a palm detector feeds (on the palm detector's entity): one entity
/// per hand wanted (MediaPipe's `max_num_hands`).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Default, Clone)]
pub struct HandTracking {
    /// The landmark DNN entities, each with `InputCrop::Roi(itself)` and a
    /// [`HandLandmarkDecoder`].
    pub hands: Vec<Entity>,
    /// While at least one hand is tracked and another is wanted, palm detection looks for it
    /// at most this often ([`DEFAULT_SEARCH_INTERVAL`]; `Duration::ZERO`: every frame, as
    /// MediaPipe's graph does). With no hand tracked it runs every frame. Looking for a second
    /// hand that is not there is the palm detector's whole load in a one-hand scene (about
    /// 35 inferences a second at 60 Hz, each longer than a landmark run): on a phone's few
    /// cores it competes with the tracked hand's own landmarks.
    pub search_interval: Duration,
    /// When palm detection was last asked for (real time since startup).
    last_search: Option<Duration>,
}

impl Default for HandTracking {
    fn default() -> Self {
        HandTracking::new(Vec::new())
    }
}

impl HandTracking {
    /// Tracking for the landmark DNN entities `hands`, searching every
    /// [`DEFAULT_SEARCH_INTERVAL`] while a hand is tracked.
    pub fn new(hands: Vec<Entity>) -> Self {
        HandTracking {
            hands,
            search_interval: DEFAULT_SEARCH_INTERVAL,
            last_search: None,
        }
    }

    /// Whether to ask palm detection now (`now`: real time since startup), given whether a
    /// hand slot is free and how many hands are tracked.
    pub fn search_due(&self, free: bool, tracked: usize, now: Duration) -> bool {
        free && (tracked == 0
            || self
                .last_search
                .is_none_or(|last| now.saturating_sub(last) >= self.search_interval))
    }

    /// Notes that palm detection was asked for at `now`.
    pub fn searched(&mut self, now: Duration) {
        self.last_search = Some(now);
    }
}

/// One tracked hand (on its landmark DNN's entity; removed when the hand is lost).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct TrackedHand {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// 21 landmarks (`x, y` frame uv, MediaPipe's `z`), presence, handedness with its score,
    /// and the ROI they were found in.
    pub hand: HandLandmarks,
    /// The ROI of the next inference, made from these landmarks (frame uv).
    pub next_roi: RotatedRect,
}

/// Decodes `palm_detection_lite` / `palm_detection_full` (2016 anchors, letterboxed input) into
/// [`PalmDetections`]; with a [`HandTracking`] on its entity, gives palms to free hands.
pub struct PalmDecoder {
    decoder: SsdDecoder,
}

impl Default for PalmDecoder {
    fn default() -> Self {
        PalmDecoder {
            decoder: palm_decoder(),
        }
    }
}

impl DnnDecoder for PalmDecoder {
    type Output = PalmDetections;

    fn decode(&self, input: &DecodeInput) -> Result<PalmDetections, DecodeError> {
        let n = self.decoder.anchors().len();
        let regressors = input.output_of_len("palm regressors", n * 18)?;
        let scores = input.output_of_len("palm scores", n)?;
        let palms: Vec<Detection> = self
            .decoder
            .decode(regressors, scores)?
            .iter()
            .map(|p| p.transformed(&input.crop.transform))
            .collect();
        let (w, h) = (input.frame_size.x, input.frame_size.y);
        let rois = palms.iter().map(|p| palm_to_roi(p, w, h)).collect();
        Ok(PalmDetections {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            frame_size: input.frame_size,
            palms,
            rois,
        })
    }

    fn deliver(&self, out: PalmDetections, entity: &mut EntityWorldMut) {
        let hands = entity
            .get::<HandTracking>()
            .map(|t| t.hands.clone())
            .unwrap_or_default();
        let (w, h) = (out.frame_size.x, out.frame_size.y);
        let frame_index = out.frame_index;
        // MediaPipe takes the first `max_num_hands` palms.
        let from_palms: Vec<RotatedRect> = out.rois.iter().take(hands.len()).copied().collect();
        entity.insert(out);
        if hands.is_empty() || from_palms.is_empty() {
            return;
        }
        entity.world_scope(|world| {
            let tracked: Vec<RotatedRect> = hands
                .iter()
                .filter_map(|&e| current_roi(world, e, w, h))
                .collect();
            // Palms first, tracked hands later: a tracked hand replaces an overlapping palm.
            let kept = associate_rois(&[&from_palms, &tracked]);
            let mut new = from_palms.iter().filter(|r| kept.contains(r));
            for &e in &hands {
                if world.get::<RegionOfInterest>(e).is_some() {
                    continue;
                }
                let Some(roi) = new.next() else {
                    break;
                };
                if let Ok(mut hand) = world.get_entity_mut(e) {
                    hand.insert(RegionOfInterest {
                        frame_index,
                        crop: hand_landmark_crop(roi, w, h).sample,
                    });
                }
            }
        });
    }
}

/// The ROI a hand entity crops now (frame uv), if any.
fn current_roi(world: &World, hand: Entity, w: u32, h: u32) -> Option<RotatedRect> {
    let roi = world.get::<RegionOfInterest>(hand)?;
    let side = HAND_LANDMARK_INPUT;
    Some(ImageToTensor::from_sample(&roi.crop, (w, h), (side, side)).roi)
}

/// Decodes `hand_landmark_lite` / `hand_landmark_full` (outputs: 63 landmark values, presence,
/// handedness, ...) run on a hand ROI crop (as [`hand_landmark_crop`] makes it) into a
/// [`TrackedHand`], and the hand's next ROI on its own entity; a hand whose presence is below
/// `min_presence` is lost (both removed).
pub struct HandLandmarkDecoder {
    /// Hands with a lower presence are dropped (MediaPipe's `min_tracking_confidence`, 0.5).
    pub min_presence: f32,
}

impl Default for HandLandmarkDecoder {
    fn default() -> Self {
        HandLandmarkDecoder { min_presence: 0.5 }
    }
}

/// What [`HandLandmarkDecoder`] delivers: the hand, or `None` when it was lost.
pub struct DecodedHand {
    hand: Option<(TrackedHand, RegionOfInterest)>,
}

impl DnnDecoder for HandLandmarkDecoder {
    type Output = DecodedHand;

    fn decode(&self, input: &DecodeInput) -> Result<DecodedHand, DecodeError> {
        let (w, h) = (input.frame_size.x, input.frame_size.y);
        let side = HAND_LANDMARK_INPUT;
        let crop = ImageToTensor::from_sample(input.crop, (w, h), (side, side));
        let hand =
            decode_hand_landmarks(input.output(0)?, input.output(1)?, input.output(2)?, &crop)?;
        // A NaN presence is no hand.
        if hand.presence.is_nan() || hand.presence < self.min_presence {
            return Ok(DecodedHand { hand: None });
        }
        let next_roi = landmarks_to_roi(&hand.points, w, h);
        let next = RegionOfInterest {
            frame_index: input.frame_index,
            crop: hand_landmark_crop(&next_roi, w, h).sample,
        };
        Ok(DecodedHand {
            hand: Some((
                TrackedHand {
                    frame_index: input.frame_index,
                    capture_time: input.capture_time,
                    hand,
                    next_roi,
                },
                next,
            )),
        })
    }

    fn deliver(&self, out: DecodedHand, entity: &mut EntityWorldMut) {
        match out.hand {
            Some((hand, roi)) => {
                entity.insert((hand, roi));
            }
            None => {
                entity.remove::<(TrackedHand, RegionOfInterest)>();
            }
        }
    }
}

/// Hand tracking's one system: requests palm detection while a [`HandTracking`] has a hand
/// without ROI, and drops the later of two tracked hands that overlap (IoU > 0.5). Add it with
/// the [`crate::HeimdallPlugin`].
pub struct HandTrackingPlugin;

impl Plugin for HandTrackingPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(PostUpdate, track_hands.before(HeimdallSystems::Requests));
    }
}

fn track_hands(
    mut commands: Commands,
    mut trackers: Query<(Entity, &mut HandTracking)>,
    hands: Query<(Option<&RegionOfInterest>, Option<&TrackedHand>)>,
    time: Res<Time<Real>>,
    mut requests: MessageWriter<RequestInference>,
) {
    for (palm, mut tracking) in &mut trackers {
        let mut free = false;
        let mut kept: Vec<RotatedRect> = Vec::new();
        for &e in &tracking.hands {
            match hands.get(e) {
                Ok((Some(_), Some(t))) => {
                    if associate_rois(&[&kept, &[t.next_roi]]).len() <= kept.len() {
                        // Overlaps a hand tracked before it: the same hand twice.
                        commands
                            .entity(e)
                            .remove::<(TrackedHand, RegionOfInterest)>();
                        free = true;
                    } else {
                        kept.push(t.next_roi);
                    }
                }
                Ok((Some(_), None)) => {}
                Ok((None, _)) => free = true,
                // Despawned: no hand to find for it.
                Err(_) => {}
            }
        }
        let now = time.elapsed();
        if tracking.search_due(free, kept.len(), now) {
            tracking.searched(now);
            requests.write(RequestInference(palm));
        }
    }
}

/// How [`spawn_hand_tracking_with`] sets up MediaPipe's hand tracking.
#[derive(Clone, Debug, PartialEq)]
pub struct HandTrackingOptions {
    /// Hands tracked at most (MediaPipe's `max_num_hands`): one landmark DNN each.
    pub max_hands: usize,
    /// The palm detector's deadline ([`Dnn::deadline`]; `None`: the plugin's default).
    pub palm_deadline: Option<Duration>,
    /// Each landmark DNN's deadline (`None`: the plugin's default).
    pub landmark_deadline: Option<Duration>,
    /// [`HandTracking::search_interval`].
    pub search_interval: Duration,
}

impl Default for HandTrackingOptions {
    /// Two hands (MediaPipe's default), the plugin's deadlines, [`DEFAULT_SEARCH_INTERVAL`].
    fn default() -> Self {
        HandTrackingOptions {
            max_hands: 2,
            palm_deadline: None,
            landmark_deadline: None,
            search_interval: DEFAULT_SEARCH_INTERVAL,
        }
    }
}

/// Spawns MediaPipe's hand tracking on `camera` for up to `max_hands` hands with the other
/// [`HandTrackingOptions`] at their defaults ([`spawn_hand_tracking_with`]).
pub fn spawn_hand_tracking(
    commands: &mut Commands,
    camera: Entity,
    palm_model: Handle<DnnModel>,
    landmark_model: Handle<DnnModel>,
    max_hands: usize,
) -> Entity {
    let options = HandTrackingOptions {
        max_hands,
        ..HandTrackingOptions::default()
    };
    spawn_hand_tracking_with(commands, camera, palm_model, landmark_model, &options)
}

/// Spawns MediaPipe's hand tracking on `camera`: the palm detector (letterboxed, `[0, 1]`, on
/// demand, [`PalmDecoder`], [`HandTracking`]) and one landmark DNN per hand (`[0, 1]`, its own
/// ROI, [`HandLandmarkDecoder`]), with `options`' deadlines and search interval. Returns the
/// palm detector's entity; the hands are its [`HandTracking::hands`]. Needs
/// [`HandTrackingPlugin`].
pub fn spawn_hand_tracking_with(
    commands: &mut Commands,
    camera: Entity,
    palm_model: Handle<DnnModel>,
    landmark_model: Handle<DnnModel>,
    options: &HandTrackingOptions,
) -> Entity {
    let hands: Vec<Entity> = (0..options.max_hands)
        .map(|_| {
            let e = commands.spawn_empty().id();
            let mut dnn = Dnn::new(landmark_model.clone(), camera)
                .with_crop(InputCrop::Roi(e))
                .with_normalization(Normalization::ZERO_TO_ONE)
                .with_decoder(HandLandmarkDecoder::default());
            dnn.deadline = options.landmark_deadline.or(dnn.deadline);
            commands.entity(e).insert(dnn);
            e
        })
        .collect();
    let mut palms = Dnn::new(palm_model, camera)
        .with_crop(InputCrop::Letterbox)
        .with_normalization(Normalization::ZERO_TO_ONE)
        .with_request(RequestMode::OnDemand)
        .with_decoder(PalmDecoder::default());
    palms.deadline = options.palm_deadline.or(palms.deadline);
    let mut tracking = HandTracking::new(hands);
    tracking.search_interval = options.search_interval;
    commands.spawn((palms, tracking)).id()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_options_reach_the_spawned_dnns() {
        let mut world = World::new();
        let camera = world.spawn_empty().id();
        let options = HandTrackingOptions {
            max_hands: 3,
            palm_deadline: Some(100 * MS),
            landmark_deadline: Some(50 * MS),
            search_interval: 250 * MS,
        };
        let palms = spawn_hand_tracking_with(
            &mut world.commands(),
            camera,
            Handle::default(),
            Handle::default(),
            &options,
        );
        world.flush();
        let palm_dnn = world.get::<Dnn>(palms).expect("the palm detector");
        assert_eq!(palm_dnn.deadline, Some(100 * MS));
        assert_eq!(palm_dnn.request, RequestMode::OnDemand);
        let tracking = world.get::<HandTracking>(palms).expect("its tracking");
        assert_eq!(tracking.search_interval, 250 * MS);
        assert_eq!(tracking.hands.len(), 3);
        for &h in &tracking.hands {
            let d = world.get::<Dnn>(h).expect("a landmark DNN");
            assert_eq!(d.deadline, Some(50 * MS));
            assert_eq!(d.crop, InputCrop::Roi(h), "each hand crops its own ROI");
        }
        // The plain spawn keeps the plugin's defaults.
        let plain = spawn_hand_tracking(
            &mut world.commands(),
            camera,
            Handle::default(),
            Handle::default(),
            1,
        );
        world.flush();
        let defaults = Dnn::new(Handle::default(), camera);
        assert_eq!(world.get::<Dnn>(plain).unwrap().deadline, defaults.deadline);
        let t = world.get::<HandTracking>(plain).unwrap();
        assert_eq!(t.search_interval, DEFAULT_SEARCH_INTERVAL);
        assert_eq!(t.hands.len(), 1);
    }

    #[test]
    fn with_no_hand_tracked_palm_detection_runs_every_frame() {
        let mut t = HandTracking::new(Vec::new());
        for f in 0..5u32 {
            let now = 16 * MS * f;
            assert!(t.search_due(true, 0, now), "frame {f}");
            t.searched(now);
        }
        assert!(!t.search_due(false, 0, 100 * MS), "no free slot, no search");
    }

    #[test]
    fn with_a_hand_tracked_the_search_for_another_waits_its_interval() {
        let mut t = HandTracking::new(Vec::new());
        assert!(
            t.search_due(true, 1, Duration::ZERO),
            "the first search is not held"
        );
        t.searched(Duration::ZERO);
        // 60 Hz frames for half a second: a search every 100 ms, on the first frame due.
        let searched: Vec<u32> = (1..30u32)
            .filter(|&f| {
                let now = Duration::from_micros(16_667 * u64::from(f));
                let due = t.search_due(true, 1, now);
                if due {
                    t.searched(now);
                }
                due
            })
            .collect();
        assert_eq!(searched, vec![6, 12, 18, 24]);
        // MediaPipe's every frame.
        t.search_interval = Duration::ZERO;
        assert!(t.search_due(true, 1, Duration::from_micros(16_667 * 30)));
        // No hand tracked any more: at once, whatever the interval.
        t.search_interval = Duration::from_secs(10);
        assert!(t.search_due(true, 0, Duration::from_micros(16_667 * 31)));
    }
}

//! The hand skeleton is MediaPipe's: `HAND_CONNECTIONS` holds exactly the 21 connections of
//! MediaPipe's `hand_connections` (`mediapipe/python/solutions/hands_connections.py`), written
//! out here by hand from that file, palm first, then each finger. Two drifted copies of the
//! table (the CLI's and the shopping example's) each missed a different bone (0-17, 19-20).

use std::collections::BTreeSet;

use heimdall_vision::hands::{HAND_CONNECTIONS, HAND_LANDMARKS};

/// MediaPipe's lists, as in `hands_connections.py`.
const PALM: [(usize, usize); 6] = [(0, 1), (0, 5), (9, 13), (13, 17), (5, 9), (0, 17)];
const THUMB: [(usize, usize); 3] = [(1, 2), (2, 3), (3, 4)];
const INDEX: [(usize, usize); 3] = [(5, 6), (6, 7), (7, 8)];
const MIDDLE: [(usize, usize); 3] = [(9, 10), (10, 11), (11, 12)];
const RING: [(usize, usize); 3] = [(13, 14), (14, 15), (15, 16)];
const PINKY: [(usize, usize); 3] = [(17, 18), (18, 19), (19, 20)];

/// A connection without its direction.
fn undirected(&(a, b): &(usize, usize)) -> (usize, usize) {
    (a.min(b), a.max(b))
}

#[test]
fn the_skeleton_is_mediapipes_21_connections() {
    let mediapipe: BTreeSet<(usize, usize)> = [&PALM[..], &THUMB, &INDEX, &MIDDLE, &RING, &PINKY]
        .concat()
        .iter()
        .map(undirected)
        .collect();
    assert_eq!(mediapipe.len(), 21, "the hand-written reference itself");
    let ours: BTreeSet<(usize, usize)> = HAND_CONNECTIONS.iter().map(undirected).collect();
    assert_eq!(
        ours.len(),
        HAND_CONNECTIONS.len(),
        "a connection is listed twice"
    );
    let missing: Vec<_> = mediapipe.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&mediapipe).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, not MediaPipe's {extra:?}"
    );
}

#[test]
fn every_landmark_is_on_the_skeleton() {
    let mut touched = [false; HAND_LANDMARKS];
    for &(a, b) in &HAND_CONNECTIONS {
        assert!(a < HAND_LANDMARKS && b < HAND_LANDMARKS, "({a}, {b})");
        touched[a] = true;
        touched[b] = true;
    }
    let loose: Vec<usize> = (0..HAND_LANDMARKS).filter(|&i| !touched[i]).collect();
    assert!(loose.is_empty(), "landmarks on no bone: {loose:?}");
}

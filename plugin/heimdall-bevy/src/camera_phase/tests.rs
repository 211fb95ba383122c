use super::*;
use crate::start_delay::{MAX_SHARE, StartDelay};

/// 60 Hz.
const PERIOD: f64 = 1e3 / 60.0;

/// A controller that saw a display-paced loop at 60 Hz: 12 ms free between one update's end and
/// the next's start (sleep included), so with a delay of 7 ms (5 ms of margin) it has room
/// for 12 − 7 − 2.5 = 2.5 ms.
fn paced() -> CameraPhase {
    let mut c = CameraPhase::default();
    for _ in 0..10 {
        c.observe(5.0, 7.0, PERIOD);
    }
    c
}

fn camera_due_in(ms: f64, start: f64) -> CameraDue {
    let period_ms = 1e3 / 30.0;
    CameraDue {
        last_ms: start + ms - period_ms,
        period_ms,
    }
}

/// A camera frame due 2 ms after the update would start: the update waits for it (and a
/// little more), within the room, which keeps half the margin and stays under a quarter of the
/// period.
#[test]
fn waits_for_a_frame_due_just_after_the_start() {
    let c = paced();
    let room = c.room_ms(7.0, 0.28, PERIOD);
    assert!((room - 2.5).abs() < 1e-9, "{room}");
    assert!(room <= MAX_WAIT_SHARE * PERIOD);
    let wait = CameraPhase::wait_ms(1000.0, [camera_due_in(2.0, 1000.0)], room);
    assert!((wait - (2.0 + ARRIVAL_SLACK_MS)).abs() < 1e-9, "{wait}");
    assert!(wait <= room);
    // Two cameras: the update waits for the later of the frames it can catch.
    let two = [camera_due_in(0.5, 1000.0), camera_due_in(1.5, 1000.0)];
    let wait = CameraPhase::wait_ms(1000.0, two, room);
    assert!((wait - (1.5 + ARRIVAL_SLACK_MS)).abs() < 1e-9, "{wait}");
}

/// A frame due after the room, or already due (it is taken anyway), or from a camera that
/// stalled (its next frame long overdue) or has no clock: no wait.
#[test]
fn does_not_wait_past_the_room_nor_for_a_stalled_camera() {
    let c = paced();
    let room = c.room_ms(7.0, 0.28, PERIOD);
    let start = 1000.0;
    assert_eq!(
        CameraPhase::wait_ms(start, [camera_due_in(room + 0.5, start)], room),
        0.0
    );
    assert_eq!(
        CameraPhase::wait_ms(start, [camera_due_in(-1.0, start)], room),
        0.0
    );
    let stalled = CameraDue {
        last_ms: start - 500.0,
        period_ms: 1e3 / 30.0,
    };
    assert_eq!(CameraPhase::wait_ms(start, [stalled], room), 0.0);
    assert_eq!(CameraPhase::wait_ms(start, [], room), 0.0);
    let broken = CameraDue {
        last_ms: f64::NAN,
        period_ms: 0.0,
    };
    assert_eq!(CameraPhase::wait_ms(start, [broken], room), 0.0);
}

/// No room without a delay (the loop is not paced by the display, or the render thread waits
/// for the main world), after the render thread waited, before anything was learnt, on a loop
/// whose gaps exceed two periods, or where the delay already takes the free time.
#[test]
fn no_room_where_a_wait_would_make_the_frame_late() {
    let c = paced();
    assert_eq!(c.room_ms(0.0, 0.0, PERIOD), 0.0);
    assert_eq!(c.room_ms(7.0, 2.0, PERIOD), 0.0);
    assert_eq!(CameraPhase::default().room_ms(7.0, 0.0, PERIOD), 0.0);
    let mut slow = paced();
    slow.observe(3.0 * PERIOD, 0.0, PERIOD);
    assert_eq!(slow.room_ms(7.0, 0.0, PERIOD), 0.0);
    assert_eq!(c.room_ms(10.0, 0.0, PERIOD), 0.0);
    // A shorter free time counts at once, a longer one only slowly.
    let mut c = paced();
    c.observe(2.0, 7.0, PERIOD);
    assert!((c.room_ms(7.0, 0.0, PERIOD) - 0.0).abs() < 1e-9);
    c.observe(5.0, 7.0, PERIOD);
    assert!(c.room_ms(7.0, 0.0, PERIOD) < 0.5);
}

/// One run of a display-paced 60 Hz loop (the update takes `update` ms; the render thread takes
/// the frame at the next 16.7 ms slot) with a 30 Hz camera whose frames are due `phase` ms after
/// the point where the update starts once its delay settled, as `start_frame` drives the two
/// controllers. Returns, per update that took a new camera frame, how long the frame had waited
/// (start − due), and whether any update ended after its slot (a late frame).
fn run_loop(lock: bool, update: f64, phase: f64) -> (Vec<f64>, bool) {
    let camera = 1e3 / 30.0;
    let (mut delay, mut phase_ctl) = (StartDelay::default(), CameraPhase::default());
    let (mut gap, mut render_wait, mut slept, mut extra) = (0.0, 0.0, 0.0, 0.0);
    let (mut lags, mut late, mut taken) = (Vec::new(), false, None::<i64>);
    let mut first_due = None;
    for k in 0..400 {
        let wake = k as f64 * PERIOD;
        let d = delay.update_after_wait(gap, render_wait, PERIOD, extra);
        phase_ctl.observe(gap, slept, PERIOD);
        // The camera's clock is set once the delay settled: its frames are due `phase` ms after
        // the settled start, every other update.
        if k == 200 {
            first_due = Some(wake + d + phase);
        }
        let due = |j: i64| first_due.unwrap_or(f64::INFINITY) + j as f64 * camera;
        let last_j = |t: f64| ((t - due(0)) / camera).floor() as i64;
        let start0 = wake + d;
        let cam = first_due.map(|_| CameraDue {
            last_ms: due(last_j(start0)),
            period_ms: camera,
        });
        let room = phase_ctl.room_ms(d, render_wait, PERIOD);
        let wait = match (lock, cam) {
            (true, Some(c)) => CameraPhase::wait_ms(start0, [c], room),
            _ => 0.0,
        };
        let start = start0 + wait;
        if first_due.is_some() && start >= due(0) {
            let j = last_j(start);
            if taken != Some(j) {
                taken = Some(j);
                if k > 220 {
                    lags.push(start - due(j));
                }
            }
        }
        let end = start + update;
        let slot = wake + PERIOD;
        late |= end > slot;
        (gap, render_wait) = if end <= slot {
            (slot - end, 0.28)
        } else {
            (0.0, end - slot)
        };
        (slept, extra) = (d + wait, wait);
    }
    (lags, late)
}

/// A 30 Hz camera on a 60 Hz display-paced loop, its frames due 1.5 ms after the update would
/// start: without the lock each frame waits a whole period for the next update; with it the
/// update waits for the frame and takes it at once, on every update that gets a new frame; no
/// update ends late either way. A frame due 6 ms after the start (past the room) is not waited
/// for. The delay is unchanged by the waits (they are not taken for shorter gaps).
#[test]
fn a_30_hz_camera_on_a_60_hz_loop_is_taken_as_it_arrives() {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (locked, late) = run_loop(true, 4.0, 1.5);
    assert!(!late);
    assert!(locked.len() >= 80, "{}", locked.len());
    assert!(
        locked.iter().all(|&l| (0.0..=0.3).contains(&l)),
        "{locked:?}"
    );
    let (plain, late) = run_loop(false, 4.0, 1.5);
    assert!(!late);
    assert!(
        plain.iter().all(|&l| (PERIOD - 1.6..PERIOD).contains(&l)),
        "{plain:?}"
    );
    assert!(mean(&plain) - mean(&locked) > 14.0);
    let (far, late) = run_loop(true, 4.0, 6.0);
    assert!(!late);
    let (far_plain, _) = run_loop(false, 4.0, 6.0);
    assert_eq!(far, far_plain, "a frame past the room is not waited for");
    // The settled delay is the same with and without the waits (below its cap).
    let settled = |lock: bool| {
        let (mut d, mut gap, mut extra) = (StartDelay::default(), 0.0, 0.0);
        for k in 0..300 {
            let delay = d.update_after_wait(gap, 0.28, PERIOD, extra);
            let wait = if lock && k % 2 == 0 { 1.75 } else { 0.0 };
            (gap, extra) = (PERIOD - (delay + wait + 4.0), wait);
        }
        d.delay_ms
    };
    assert!((settled(true) - settled(false)).abs() < 0.05);
    assert!(settled(true) < MAX_SHARE * PERIOD);
}

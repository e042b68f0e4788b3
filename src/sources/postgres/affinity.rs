//! Which share of a source's read pool the current thread uses.
//!
//! A tokio-postgres connection is driven by a task on the thread that opened it. A caller
//! on another thread hands each request to that task and is woken by it again: two
//! cross-thread wake-ups per statement, about 50 µs on a 2-core VM (measured with an
//! eventfd ping-pong: 51 µs between cores, 6.5 µs on one), which is more than a point
//! query costs PostgreSQL. So the read pool is split into one share per HTTP worker, and
//! each worker opens and uses only the connections of its own share: the statement, the
//! connection task and the answer stay on one thread.
//!
//! HTTP workers take their place when they start ([`pin_current_thread`]); any other
//! thread takes the next one on first use. Shares are chosen by place modulo the number
//! of shares, so correctness never depends on the assignment, only the number of wake-ups.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static PLACE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Gives the current thread its place, if it has none yet (HTTP workers call this as
/// they start, so consecutive workers land on consecutive shares).
pub fn pin_current_thread() -> usize {
    PLACE.with(|p| match p.get() {
        Some(place) => place,
        None => {
            let place = NEXT.fetch_add(1, Ordering::Relaxed);
            p.set(Some(place));
            place
        }
    })
}

/// The share, out of `shares`, that the current thread uses.
pub fn share(shares: usize) -> usize {
    pin_current_thread() % shares.max(1)
}

#[cfg(test)]
mod tests {
    use super::{pin_current_thread, share};

    #[test]
    fn a_thread_keeps_its_place_and_threads_spread_over_the_shares() {
        let here = pin_current_thread();
        assert_eq!(pin_current_thread(), here);
        assert_eq!(share(1), 0);
        let places: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(pin_current_thread).join().unwrap())
            .collect();
        let mut sorted = places.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            4,
            "every thread has a place of its own: {places:?}"
        );
        let on_a_thread = std::thread::spawn(|| (pin_current_thread(), share(3)));
        let (place, of_three) = on_a_thread.join().unwrap();
        assert_eq!(of_three, place % 3);
    }
}

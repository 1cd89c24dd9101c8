//! Timing several kernels fairly on a shared machine: every run of every
//! kernel interleaved, round by round, so that a burst of load falls on all
//! of them alike rather than on whichever was being timed (`rewrite
//! --search`, `tune`).

/// One compiled, verified kernel ready to be timed: each call runs it once
/// and gives its seconds (the kernel alone).
pub type Timer<'a> = Box<dyn FnMut() -> Result<f64, String> + 'a>;

/// Runs every timer `reps` times in interleaved rounds (each round runs each
/// timer once, starting one further along each round); each timer's times,
/// or the error of its first run that failed (it is not run again). `None`
/// stands for a kernel that could not be prepared: it gets no times.
/// `round_done` is called after each round (a progress bar).
pub fn interleaved(
    timers: &mut [Option<Timer>],
    reps: usize,
    round_done: &mut dyn FnMut(),
) -> Vec<Result<Vec<f64>, String>> {
    let mut times: Vec<Result<Vec<f64>, String>> = timers.iter().map(|_| Ok(Vec::with_capacity(reps))).collect();
    let count = timers.len().max(1);
    for round in 0..reps {
        for k in 0..timers.len() {
            let j = (k + round) % count;
            let (Some(timer), Ok(ts)) = (timers[j].as_mut(), times[j].as_mut()) else { continue };
            match timer() {
                Ok(s) => ts.push(s),
                Err(e) => times[j] = Err(e),
            }
        }
        round_done();
    }
    times
}

/// The median and the minimum of some times; `None` for none.
pub fn median_min(mut v: Vec<f64>) -> Option<(f64, f64)> {
    v.sort_by(f64::total_cmp);
    Some((*v.get(v.len() / 2)?, *v.first()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_and_a_failed_timer_stops() {
        let order = std::cell::RefCell::new(Vec::new());
        let mut calls = 0;
        let mut timers: Vec<Option<Timer>> = vec![
            Some(Box::new(|| {
                order.borrow_mut().push('a');
                Ok(1.0)
            })),
            None,
            Some(Box::new(|| {
                order.borrow_mut().push('b');
                calls += 1;
                if calls == 2 { Err("broke".into()) } else { Ok(2.0) }
            })),
        ];
        let mut rounds = 0;
        let got = interleaved(&mut timers, 3, &mut || rounds += 1);
        drop(timers);
        assert_eq!(rounds, 3);
        assert_eq!(got[0], Ok(vec![1.0, 1.0, 1.0]));
        assert_eq!(got[1], Ok(vec![]));
        assert_eq!(got[2], Err("broke".to_string()));
        // Round 0 starts at a, round 1 at the empty slot (then b), round 2 at b (already failed: skipped).
        assert_eq!(order.into_inner(), vec!['a', 'b', 'b', 'a', 'a']);
        assert_eq!(median_min(vec![3.0, 1.0, 2.0]), Some((2.0, 1.0)));
        assert_eq!(median_min(vec![]), None);
    }
}

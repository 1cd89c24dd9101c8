//! The random choices of a case ([`Tape`]).

/// The random choices of one case.
#[derive(Clone, Debug)]
pub struct Tape {
    state: u64,
    replay: Option<Vec<u64>>,
    pos: usize,
    /// Every value drawn, in order.
    pub drawn: Vec<u64>,
}

impl Tape {
    /// Fresh choices from `seed`.
    pub fn seeded(seed: u64) -> Tape {
        Tape { state: seed ^ 0x9E37_79B9_7F4A_7C15, replay: None, pos: 0, drawn: Vec::new() }
    }
    /// The choices of `values`, then zeros.
    pub fn replaying(values: Vec<u64>) -> Tape {
        Tape { state: 0, replay: Some(values), pos: 0, drawn: Vec::new() }
    }
    pub(super) fn draw(&mut self) -> u64 {
        let v = match &self.replay {
            Some(r) => r.get(self.pos).copied().unwrap_or(0),
            None => {
                // splitmix64
                self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            }
        };
        self.pos += 1;
        self.drawn.push(v);
        v
    }
    /// A number in `0 .. n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.draw() % n }
    }
    /// A number in `0 .. n` and what is left of the draw (`draw / n`): a
    /// second choice that costs no draw of its own, so that a choice added
    /// on top of an old one leaves every other case's draws as they were.
    pub fn below_split(&mut self, n: u64) -> (u64, u64) {
        if n == 0 {
            return (0, 0);
        }
        let v = self.draw();
        (v % n, v / n)
    }
    /// Index of an option, chosen with the given weights (index 0 is the
    /// simplest option, the one a replayed 0 picks).
    pub(super) fn weighted(&mut self, weights: &[u32]) -> usize {
        self.weighted_split(weights).0
    }
    /// [`weighted`](Self::weighted) and what is left of the draw, as
    /// [`below_split`](Self::below_split) gives it: a refinement of the
    /// choice (a new construct among an old one's) that draws nothing more.
    /// A replayed 0 leaves 0: refinements take 0 for the old construct.
    pub(super) fn weighted_split(&mut self, weights: &[u32]) -> (usize, u64) {
        let total: u32 = weights.iter().sum();
        let (x, rest) = self.below_split(u64::from(total.max(1)));
        let mut x = x as u32;
        for (k, w) in weights.iter().enumerate() {
            if x < *w {
                return (k, rest);
            }
            x -= w;
        }
        (0, rest)
    }
    /// One of `items`.
    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

//! Thread ids and sort positions of the tracks of each process.

use std::collections::{HashMap, HashSet};

/// Thread ids per process: a host line's own thread id when it fits and is
/// free, else a fresh one.
#[derive(Default)]
pub(crate) struct Tids {
    used: HashSet<(i32, i32)>,
    next: HashMap<i32, i32>,
    sort: HashMap<i32, i32>,
}

impl Tids {
    const SYNTHETIC: i32 = 1 << 30;

    pub fn take(&mut self, pid: i32, wanted: Option<i64>) -> i32 {
        if let Some(tid) = wanted.and_then(|t| i32::try_from(t).ok())
            && tid > 0
            && tid < Self::SYNTHETIC
            && self.used.insert((pid, tid))
        {
            return tid;
        }
        let next = self.next.entry(pid).or_insert(Self::SYNTHETIC);
        while !self.used.insert((pid, *next)) {
            *next += 1;
        }
        *next
    }

    pub fn sort_index(&mut self, pid: i32) -> i32 {
        let s = self.sort.entry(pid).or_insert(0);
        *s += 1;
        *s - 1
    }
}

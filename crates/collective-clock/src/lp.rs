//! A small linear programme solver for problems with few variables and many
//! sparse constraints: `maximise c·x subject to G x ≤ h`, `x` free.
//!
//! The joint centre (`maximin.rs`) has a few variables per node and one
//! constraint per pair of participants of every instance, so it is solved
//! through its dual, `minimise h·y subject to Gᵀy = c, y ≥ 0`: a standard
//! form with one row per primal variable and one column per constraint.
//! The revised simplex keeps the inverse of the (few × few) basis dense and
//! prices the many columns sparsely, so a step costs O(rows² + nonzeros).
//! Phase I starts from artificial columns; Dantzig's rule picks the
//! entering column, Bland's takes over while the objective stalls (the
//! problem is very degenerate: every right-hand side but one is 0), and
//! the inverse is rebuilt from the basis every [`REFACTOR`] pivots. The
//! primal solution is the simplex multipliers of the optimal basis.

/// Pivots between two rebuilds of the basis inverse.
const REFACTOR: usize = 64;
/// Pivots without progress before Bland's rule takes over.
const STALL: usize = 32;
/// Relative tolerance on reduced costs and pivots.
const TOL: f64 = 1e-9;

/// One sparse row of `G`: `(variable, coefficient)`.
pub(crate) type Row = Vec<(usize, f64)>;

/// Why no solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LpFailure {
    /// No `x` satisfies every row.
    Infeasible,
    /// The objective has no maximum on the rows.
    Unbounded,
    /// The pivot budget ran out, or the basis became singular.
    Stuck,
}

/// `maximise c·x subject to rows[k]·x ≤ h[k]`: the optimal `x`, or why none.
pub(crate) fn maximise(c: &[f64], rows: &[Row], h: &[f64]) -> Result<Vec<f64>, LpFailure> {
    Simplex::new(c, rows, h).solve()
}

/// The dual in standard form and the state of its revised simplex.
struct Simplex<'a> {
    /// Rows of the dual: one per primal variable.
    m: usize,
    /// Columns: the primal's rows (each a sparse dual column), then `m`
    /// artificial columns.
    cols: &'a [Row],
    /// Per dual row: +1, or −1 where `c` was negative (so `b ≥ 0`).
    sign: Vec<f64>,
    /// `b = sign · c`.
    b: Vec<f64>,
    /// Costs of the structural columns (`h`).
    cost: &'a [f64],
    /// Per basis position: its column (`≥ cols.len()`: artificial).
    basis: Vec<usize>,
    /// Row-major `m × m` basis inverse.
    inv: Vec<f64>,
    /// The basic variables' values.
    value: Vec<f64>,
    /// Phase I (artificial costs 1, structural 0) or II.
    phase_one: bool,
}

impl<'a> Simplex<'a> {
    fn new(c: &[f64], cols: &'a [Row], cost: &'a [f64]) -> Self {
        let m = c.len();
        let sign: Vec<f64> = c
            .iter()
            .map(|&v| if v < 0.0 { -1.0 } else { 1.0 })
            .collect();
        let b: Vec<f64> = c.iter().zip(&sign).map(|(v, s)| v * s).collect();
        let mut inv = vec![0.0; m * m];
        for i in 0..m {
            inv[i * m + i] = 1.0;
        }
        Simplex {
            m,
            cols,
            value: b.clone(),
            sign,
            b,
            cost,
            basis: (0..m).map(|i| cols.len() + i).collect(),
            inv,
            phase_one: true,
        }
    }

    fn solve(mut self) -> Result<Vec<f64>, LpFailure> {
        let budget = 50 * (self.m + 10) * (self.m + 10) + 10 * self.cols.len();
        let mut pivots = 0;
        for phase_one in [true, false] {
            self.phase_one = phase_one;
            let mut best = f64::INFINITY;
            let mut stalled = 0;
            loop {
                let pi = self.multipliers();
                let Some(k) = self.entering(&pi, stalled >= STALL) else {
                    break;
                };
                let u = self.direction(k);
                let Some(r) = self.leaving(&u, stalled >= STALL) else {
                    return Err(LpFailure::Infeasible); // the dual is unbounded
                };
                self.pivot(r, k, &u);
                pivots += 1;
                if pivots > budget {
                    return Err(LpFailure::Stuck);
                }
                if pivots % REFACTOR == 0 {
                    self.refactor()?;
                }
                let objective = self.objective();
                if objective < best - TOL * (1.0 + best.abs().min(1e300)) {
                    best = objective;
                    stalled = 0;
                } else {
                    stalled += 1;
                }
            }
            if phase_one {
                let scale = 1.0 + self.b.iter().map(|v| v.abs()).fold(0.0, f64::max);
                if self.objective() > 1e-7 * scale {
                    return Err(LpFailure::Unbounded); // the dual is infeasible
                }
            }
        }
        let pi = self.multipliers();
        Ok(pi.iter().zip(&self.sign).map(|(p, s)| p * s).collect())
    }

    /// The cost of column `k` in the current phase.
    fn cost_of(&self, k: usize) -> f64 {
        match (k < self.cols.len(), self.phase_one) {
            (true, true) => 0.0,
            (true, false) => self.cost[k],
            (false, true) => 1.0,
            (false, false) => 0.0,
        }
    }

    fn objective(&self) -> f64 {
        self.basis
            .iter()
            .zip(&self.value)
            .map(|(&k, v)| self.cost_of(k) * v)
            .sum()
    }

    /// `πᵀ = c_Bᵀ B⁻¹`.
    fn multipliers(&self) -> Vec<f64> {
        let m = self.m;
        let mut pi = vec![0.0; m];
        for (i, &k) in self.basis.iter().enumerate() {
            let c = self.cost_of(k);
            if c != 0.0 {
                let row = &self.inv[i * m..(i + 1) * m];
                for (p, v) in pi.iter_mut().zip(row) {
                    *p += c * v;
                }
            }
        }
        pi
    }

    /// The reduced cost of structural column `k`, and the size of the
    /// terms it is the sum of (its tolerance's scale).
    fn reduced(&self, pi: &[f64], k: usize) -> (f64, f64) {
        let cost = self.cost_of(k);
        let (dot, size) = self.cols[k]
            .iter()
            .fold((0.0, cost.abs()), |(dot, size), &(r, v)| {
                let t = pi[r] * self.sign[r] * v;
                (dot + t, size + t.abs())
            });
        (cost - dot, size)
    }

    /// The entering column: the most negative reduced cost (Dantzig), or
    /// the first negative one (`bland`); `None` at the optimum.
    fn entering(&self, pi: &[f64], bland: bool) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for k in 0..self.cols.len() {
            let (d, size) = self.reduced(pi, k);
            if d < -TOL * (1.0 + size) {
                if bland {
                    return Some(k);
                }
                if best.is_none_or(|(_, b)| d < b) {
                    best = Some((k, d));
                }
            }
        }
        best.map(|(k, _)| k)
    }

    /// `B⁻¹ a_k`.
    fn direction(&self, k: usize) -> Vec<f64> {
        let m = self.m;
        let mut u = vec![0.0; m];
        for &(r, v) in &self.cols[k] {
            let v = v * self.sign[r];
            for (i, ui) in u.iter_mut().enumerate() {
                *ui += self.inv[i * m + r] * v;
            }
        }
        u
    }

    /// The leaving position (ratio test); artificials at 0 leave on any
    /// nonzero entry in phase II. `None` when nothing blocks.
    fn leaving(&self, u: &[f64], bland: bool) -> Option<usize> {
        let scale = u.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let tol = TOL * scale.max(1e-300);
        let mut best: Option<(usize, f64)> = None;
        for (i, (&ui, &vi)) in u.iter().zip(&self.value).enumerate() {
            let artificial = self.basis[i] >= self.cols.len();
            let ratio = if !self.phase_one && artificial && ui.abs() > tol {
                0.0
            } else if ui > tol {
                vi.max(0.0) / ui
            } else {
                continue;
            };
            let better = match best {
                None => true,
                Some((j, r)) if bland => ratio < r || (ratio == r && self.basis[i] < self.basis[j]),
                Some((j, r)) => ratio < r || (ratio == r && ui.abs() > u[j].abs()),
            };
            if better {
                best = Some((i, ratio));
            }
        }
        best.map(|(i, _)| i)
    }

    fn pivot(&mut self, r: usize, k: usize, u: &[f64]) {
        let m = self.m;
        let p = u[r];
        let theta = self.value[r] / p;
        for (i, v) in self.value.iter_mut().enumerate() {
            if i != r {
                *v -= theta * u[i];
            }
        }
        self.value[r] = theta;
        let (before, rest) = self.inv.split_at_mut(r * m);
        let (pivot_row, after) = rest.split_at_mut(m);
        for v in pivot_row.iter_mut() {
            *v /= p;
        }
        for (i, row) in before.chunks_mut(m).chain(after.chunks_mut(m)).enumerate() {
            let i = if i < r { i } else { i + 1 };
            let f = u[i];
            if f != 0.0 {
                for (x, y) in row.iter_mut().zip(pivot_row.iter()) {
                    *x -= f * y;
                }
            }
        }
        self.basis[r] = k;
    }

    /// Rebuild `B⁻¹` and the basic values from the basis (Gauss–Jordan with
    /// partial pivoting).
    fn refactor(&mut self) -> Result<(), LpFailure> {
        let m = self.m;
        let mut a = vec![0.0; m * m]; // B, row-major
        for (j, &k) in self.basis.iter().enumerate() {
            if k < self.cols.len() {
                for &(r, v) in &self.cols[k] {
                    a[r * m + j] += v * self.sign[r];
                }
            } else {
                a[(k - self.cols.len()) * m + j] = 1.0;
            }
        }
        let mut inv = vec![0.0; m * m];
        for i in 0..m {
            inv[i * m + i] = 1.0;
        }
        for col in 0..m {
            let piv = (col..m)
                .max_by(|&x, &y| a[x * m + col].abs().total_cmp(&a[y * m + col].abs()))
                .ok_or(LpFailure::Stuck)?;
            if a[piv * m + col].abs() < 1e-12 {
                return Err(LpFailure::Stuck);
            }
            for j in 0..m {
                a.swap(col * m + j, piv * m + j);
                inv.swap(col * m + j, piv * m + j);
            }
            let p = a[col * m + col];
            for j in 0..m {
                a[col * m + j] /= p;
                inv[col * m + j] /= p;
            }
            for i in (0..m).filter(|&i| i != col) {
                let f = a[i * m + col];
                if f != 0.0 {
                    for j in 0..m {
                        a[i * m + j] -= f * a[col * m + j];
                        inv[i * m + j] -= f * inv[col * m + j];
                    }
                }
            }
        }
        self.value = (0..m)
            .map(|i| (0..m).map(|j| inv[i * m + j] * self.b[j]).sum())
            .collect();
        self.inv = inv;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn a_textbook_programme() {
        // max 3x + 5y: x ≤ 4, 2y ≤ 12, 3x + 2y ≤ 18 → (2, 6).
        let rows = vec![vec![(0, 1.0)], vec![(1, 2.0)], vec![(0, 3.0), (1, 2.0)]];
        let x = maximise(&[3.0, 5.0], &rows, &[4.0, 12.0, 18.0]).unwrap();
        assert!(close(&x, &[2.0, 6.0]), "{x:?}");
    }

    #[test]
    fn free_variables_and_negative_bounds() {
        // max −x − y (min x + y): x ≥ −3, y ≥ 2, x − y ≥ −10 → (−3, 2).
        let rows = vec![vec![(0, -1.0)], vec![(1, -1.0)], vec![(0, -1.0), (1, 1.0)]];
        let x = maximise(&[-1.0, -1.0], &rows, &[3.0, -2.0, 10.0]).unwrap();
        assert!(close(&x, &[-3.0, 2.0]), "{x:?}");
    }

    #[test]
    fn the_largest_minimum_slack_of_intervals() {
        // max s: z − s ≥ 1, −z − s ≥ −5 (z in [1, 5]) → z = 3, s = 2,
        // written as −z + s ≤ −1, z + s ≤ 5.
        let rows = vec![vec![(0, -1.0), (1, 1.0)], vec![(0, 1.0), (1, 1.0)]];
        let x = maximise(&[0.0, 1.0], &rows, &[-1.0, 5.0]).unwrap();
        assert!(close(&x, &[3.0, 2.0]), "{x:?}");
    }

    #[test]
    fn infeasible_and_unbounded() {
        let rows = vec![vec![(0, 1.0)], vec![(0, -1.0)]];
        assert_eq!(
            maximise(&[1.0], &rows, &[1.0, -2.0]),
            Err(LpFailure::Infeasible)
        );
        assert_eq!(
            maximise(&[1.0], &[vec![(0, -1.0)]], &[0.0]),
            Err(LpFailure::Unbounded)
        );
    }
}

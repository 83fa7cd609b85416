//! A path planner for a tank: an occupancy grid of the world at ground level ([`NavGrid`]), shortest paths
//! pulled taut into straight legs ([`NavGrid::find_path`]), distance fields from one goal shared by many bots
//! ([`NavGrid::distance_field`]), and a steering law that drives our tank along a path with few control
//! changes ([`PathFollower`]).
//!
//! # Model
//!
//! * **Ground level only.** The grid says where a tank can stand and drive at ground level: on the ground
//!   (z = 0), or on an obstacle low enough to drive onto (see below). Roofs, ramps, jumps and teleporters are
//!   not planned with here: [`crate::bot::levels`] plans over the decks above the ground and the drives, falls,
//!   jumps and teleports between them, and uses this grid for the ground. A tank on a roof (or anywhere else
//!   the grid calls blocked) is first sent to the nearest free cell ([`NavGrid::nearest_free`];
//!   [`NavGrid::find_path`] and [`DistanceField::next_waypoint`] do it themselves): driving off a roof is a fall,
//!   which our tank survives.
//! * **Configuration space.** A cell is free when a tank centred on the cell's centre fits there **at every
//!   heading**, with a margin of half a cell. Tanks turn while they drive (and turn in place at corners), so
//!   the planner cannot rely on a heading. The footprint tested is the tank's rectangle (half-length and
//!   half-width from [`Physics`], each grown by the margin) at [`HEADINGS`] headings 22.5° apart, whose union
//!   is within 3 % of the circumscribed disc (radius `hypot(l/2 + m, w/2 + m)`: 4.66 for the default tank on
//!   2-unit cells, 4.4 on 1-unit ones), after a quick test of the square around that disc. The margin makes
//!   every point of a free cell, not only its centre, a safe place for the tank's centre (to within the
//!   corners of the cell), so a segment whose cells are all free is clear for the whole swept tank:
//!   [`NavGrid::clear_line`] walks every cell the segment touches (a supercover traversal, with both side
//!   cells where it passes exactly through a cell corner). The price: a gap between two obstacles lets a tank
//!   through only when it is about twice that radius wide (9.3 units on an 800-unit world), where a tank
//!   lined up with the gap needs 2.8. Bots keep their distance from walls.
//! * **Cell size.** Memory and time grow with the number of cells. The default cell is
//!   `max(world side / 400, 1)`: 2 units on an 800 × 800 world, 1 unit on a 400 × 400 one, so a default grid
//!   has at most 400 × 400 cells; [`NavGrid::with_cell`] takes another size, down to `side / 512`
//!   ([`MAX_SIDE_CELLS`]). A cell costs 3.3 bytes: its kind (1), its connected component (2), and a bit in
//!   each of two bit matrices (by rows and by columns) that the path search scans 64 cells at a time.
//!
//! # Blocked cells
//!
//! A cell is blocked when, for a tank centred on it:
//!
//! * **Solid** ([`CellKind::Solid`]): the tank's box, `_tankHeight` high, collides at one of the tested
//!   headings with something it cannot drive through ([`WorldModel::tank_collides`]: outer walls, boxes,
//!   pyramids, bases, teleporter frames, mesh faces, the inside of meshes). Obstacles whose bottom is above
//!   the tank's height do not collide, so the space under floating obstacles is free. **Low obstacles are
//!   climbed**: when everything the tank collides with is a flat-topped obstacle (box, base or teleporter, the
//!   kinds our [`Tank`] drives onto) whose top is less than `_maxBumpHeight` above the ground, the tank is
//!   raised onto the highest of those tops (or onto the ground under its centre, [`WorldModel::ground`]
//!   probed from `_maxBumpHeight`, if higher), and the cell is free ([`CellKind::Raised`]) when the raised
//!   tank collides with nothing at any heading. A 0.2-high slab is driven over; a 1-high box is not.
//! * **Teleporter**: its centre is within a tank's half-length plus the margin of the field of a vertical
//!   teleporter that stands on the ground (or on a bump). Driving into a field teleports the tank; bots
//!   should only do that on purpose.
//! * **Water**: the world's water is at or above the level the tank would stand at (our tank dies there).
//! * **Death**: its centre is within a tank's half-length plus the margin of an upward-facing solid mesh face
//!   with a death physics driver, lower than `_maxBumpHeight`.
//! * **Outside**: its centre is nearer than the footprint's radius to the outer walls (the world's side from
//!   the walls, else [`Physics::world_size`]), or it is on the grid's outermost ring.
//!
//! Paths are 8-connected: a diagonal step needs both side cells free, so corners are never cut. The
//! connected components of the free cells are labelled when the grid is built, so an unreachable goal is
//! answered at once.
//!
//! # Paths
//!
//! [`NavGrid::find_path`] snaps a blocked start or goal to [`NavGrid::nearest_free`] and, unless the straight
//! line is clear, finds a shortest 8-connected cell path (octile costs) with jump point search, an A* that
//! skips the cells of straight runs (scanning the bit matrices a word at a time), then pulls it taut: first
//! greedily (from each waypoint to the farthest cell of the path in sight), then by choosing the shortest
//! chain through those waypoints and the path's cells at convex corners of the blocked region (where a taut
//! string bends) whose legs are all clear lines. It searches from both ends, which break ties between equally
//! short cell paths differently, and keeps the shorter result. The waypoints are the actual start, the
//! snapped start if different, the corners, and the goal (or its snapped point); every leg after the first
//! snap is a clear line.
//!
//! # Distance fields
//!
//! [`NavGrid::distance_field`] runs Dijkstra from the goal over the free cells with integer octile costs
//! (70 per cell side, 99 per diagonal) and a bucket queue. A field answers at once whether the goal is
//! reached from a point and its octile distance ([`DistanceField::rough_distance`], up to 8 % more than the
//! length of a taut path). [`DistanceField::path`] and [`DistanceField::distance`] walk down the field (from
//! each cell to the neighbour on a shortest path that points most towards the goal) and pull that cell path
//! taut like [`NavGrid::find_path`]. Octile ties can hide Euclidean differences of up to 8 % between routes
//! round an obstacle on either side, so the two do not always pick the same route: on the captured worlds
//! they agree exactly for most points, to within 4 cells for 90 % of them, and to within 6 cells (1.5 %)
//! at worst. [`DistanceField::next_waypoint`] is the farthest point along the descent in a clear line: asked
//! every tick, it steers a tank along a taut path, the bends coming into sight as it drives.
//!
//! # Steering
//!
//! [`PathFollower::steer`] turns at a rate proportional to the heading error (the full rate from 20°), drives
//! at a speed whose turning circle reaches the waypoint (turning in place beyond 60°, slowing down for the
//! last waypoint), and moves on to the next waypoint within [`PathFollower::REACH`] units. The turn is
//! quantised to eighths and the speed to quarters, with some hysteresis, because every change of controls
//! costs a player update on the network: driving from the red base to the green base of the CTF world (760
//! units, 10 waypoints) changes them about 70 times in 41 s.
//!
//! # Figures
//!
//! Release build on the 2-core build machine, captured 800 × 800 CTF world (400 × 400 cells of 2 units):
//! building the grid 40–45 ms; a path across the world around the obstacles (base to base, corner to
//! corner) 110–170 µs; 200 random paths 50 µs median, 100 µs at the 90th percentile, 150–200 µs at worst (a
//! short clear line 0.1 µs); a distance field 2.3–2.6 ms, then [`DistanceField::next_waypoint`] 9 µs,
//! [`DistanceField::distance`] 24 µs, [`DistanceField::rough_distance`] 0.1 µs. The grid holds 525 kB
//! (3.3 bytes a cell), a distance field 662 kB (4.1). On the 400 × 400 custom world (1-unit cells): 26 ms,
//! 70–290 µs across, 60 µs median, 2.8 ms. `cargo test --release --lib bot::nav -- --ignored --nocapture`
//! prints them again.
//!
//! [`Tank`]: crate::bzflag::play::Tank

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::f32::consts::{FRAC_PI_3, PI};
use std::fmt;

use glam::{Vec2, Vec3};

use crate::bzflag::msg::wrap_angle;
use crate::bzflag::play::physics::Physics;
use crate::bzflag::world::{ObstacleId, ObstacleKind, TankBox, WorldModel};

/// [`NavGrid::component`] of a part the grid did not number: joined with every part.
pub const ANY_PART: u32 = MANY as u32;

/// Most cells along a side of a grid.
pub const MAX_SIDE_CELLS: usize = 512;

/// Cells along a side of a grid by default (memory and time grow with its square).
pub const DEFAULT_SIDE_CELLS: usize = 400;

/// The smallest default cell (units); smaller cells are only used when asked for ([`NavGrid::with_cell`]).
pub const MIN_DEFAULT_CELL: f32 = 1.0;

/// Headings (over half a turn: a tank's box is symmetric) at which a tank is tested in a cell that is not
/// clear of everything within the footprint's radius.
pub const HEADINGS: usize = 8;

/// Cells per side of the blocks tested at once when the grid is built.
const BLOCK: usize = 8;

const SOLID: u8 = 1;
const FIELD: u8 = 2;
const WATER: u8 = 4;
const DEATH: u8 = 8;
const OUTSIDE: u8 = 16;
const RAISED: u8 = 32;
const BLOCKED: u8 = SOLID | FIELD | WATER | DEATH | OUTSIDE;

/// Integer step costs: straight and diagonal (99 / 70 = 1.41429).
const STRAIGHT: u32 = 70;
const DIAGONAL: u32 = 99;

/// The 8 directions: 4 straight, then 4 diagonal.
const DIRS: [(i8, i8); 8] = [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)];

/// Component label of cells whose component was not numbered (more than 65,534 components).
const MANY: u16 = u16::MAX;

/// Most candidate waypoints (greedy waypoints and corners) a path is pulled through; past that, the greedy
/// pull is kept.
const MAX_PULL_CANDIDATES: usize = 96;

/// What a cell of the grid is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// On the ground, free.
    Free,
    /// Free, on a low obstacle the tank drives onto.
    Raised,
    /// The tank would collide with something.
    Solid,
    /// Too close to a teleporter field.
    Teleporter,
    /// Under water.
    Water,
    /// On or near a death physics driver.
    Death,
    /// Too close to the outer walls, or outside the grid.
    Outside,
}

impl CellKind {
    fn of(bits: u8) -> CellKind {
        if bits & OUTSIDE != 0 {
            CellKind::Outside
        } else if bits & SOLID != 0 {
            CellKind::Solid
        } else if bits & FIELD != 0 {
            CellKind::Teleporter
        } else if bits & DEATH != 0 {
            CellKind::Death
        } else if bits & WATER != 0 {
            CellKind::Water
        } else if bits & RAISED != 0 {
            CellKind::Raised
        } else {
            CellKind::Free
        }
    }

    /// A tank can be here.
    pub fn is_free(self) -> bool {
        matches!(self, CellKind::Free | CellKind::Raised)
    }
}

/// Where the cells are: a square of `n × n` cells of side `cell` from `origin` (the low corner).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frame {
    origin: Vec2,
    cell: f32,
    n: usize,
}

impl Frame {
    /// Grid coordinates (cells, from the low corner) of a point.
    fn grid(&self, p: Vec2) -> Vec2 {
        (p - self.origin) / self.cell
    }

    /// The cell containing `p`.
    fn index(&self, p: Vec2) -> Option<usize> {
        let g = self.grid(p);
        if !g.is_finite() || g.x < 0.0 || g.y < 0.0 {
            return None;
        }
        let (x, y) = (g.x as usize, g.y as usize);
        (x < self.n && y < self.n).then_some(y * self.n + x)
    }

    fn xy(&self, i: usize) -> (usize, usize) {
        (i % self.n, i / self.n)
    }

    fn centre_xy(&self, x: usize, y: usize) -> Vec2 {
        self.origin + Vec2::new(x as f32 + 0.5, y as f32 + 0.5) * self.cell
    }

    fn centre(&self, i: usize) -> Vec2 {
        let (x, y) = self.xy(i);
        self.centre_xy(x, y)
    }

    /// The cell offsets of the 8 directions (valid from any cell off the outermost ring).
    fn offsets(&self) -> [isize; 8] {
        let n = self.n as isize;
        DIRS.map(|(dx, dy)| isize::from(dx) + isize::from(dy) * n)
    }

    /// Clamps a point into the grid's square.
    fn clamp(&self, p: Vec2) -> Vec2 {
        let hi = self.origin + Vec2::splat(self.n as f32 * self.cell);
        p.clamp(self.origin, hi)
    }
}

/// The tank the grid is built for.
#[derive(Debug, Clone, Copy)]
struct TankDims {
    half_length: f32,
    half_width: f32,
    height: f32,
    bump: f32,
}

impl TankDims {
    fn of(phys: &Physics) -> TankDims {
        let pos = |v: f32, d: f32| if v.is_finite() && v > 0.0 { v.min(1.0e5) } else { d };
        TankDims {
            half_length: 0.5 * pos(phys.tank_length, 6.0),
            half_width: 0.5 * pos(phys.tank_width, 2.8),
            height: pos(phys.tank_height, 2.05),
            bump: if phys.max_bump_height.is_finite() { phys.max_bump_height.clamp(0.0, 1.0e5) } else { 0.33 },
        }
    }
}

/// An occupancy grid of the world at ground level for a tank of the server's size. See the module
/// documentation for the model.
#[derive(Clone)]
pub struct NavGrid {
    frame: Frame,
    /// One byte per cell: the blocked bits and [`RAISED`].
    cells: Vec<u8>,
    /// Connected component of each free cell (0 for blocked cells, [`MANY`] when not numbered).
    comp: Vec<u16>,
    /// The free cells, a bit each, by rows and by columns (for the jumps of the path search).
    rows: Bits,
    cols: Bits,
    /// Radius of the footprint tested (the tank's circumscribed radius grown by the margin).
    footprint: f32,
}

impl fmt::Debug for NavGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let free = self.cells.iter().filter(|&&c| c & BLOCKED == 0).count();
        f.debug_struct("NavGrid")
            .field("side_cells", &self.frame.n)
            .field("cell", &self.frame.cell)
            .field("free_cells", &free)
            .field("footprint", &self.footprint)
            .finish_non_exhaustive()
    }
}

/// A planned path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    /// The start, the corners, the goal.
    pub waypoints: Vec<Vec2>,
    /// Length of the polyline.
    pub length: f32,
}

impl Path {
    /// A path through `waypoints`, with its length.
    pub fn new(waypoints: Vec<Vec2>) -> Path {
        let length = waypoints.windows(2).map(|w| w[0].distance(w[1])).sum();
        Path { waypoints, length }
    }
}

/// The side of the square world the grid covers.
fn world_side(world: &WorldModel, phys: &Physics) -> f32 {
    let ok = |s: f32| s.is_finite() && s > 0.0;
    let s = if !world.walls.is_empty() && ok(world.world_size) {
        world.world_size
    } else if ok(phys.world_size) {
        phys.world_size
    } else if ok(world.world_size) {
        world.world_size
    } else {
        800.0
    };
    s.clamp(1.0, 1.0e6)
}

fn default_cell(side: f32) -> f32 {
    (side / DEFAULT_SIDE_CELLS as f32).max(MIN_DEFAULT_CELL)
}

/// The top of a flat-topped obstacle our tank drives onto when it is low enough (as `Tank::step` does).
fn flat_top(world: &WorldModel, id: ObstacleId) -> Option<f32> {
    let o = world.obstacle(id)?;
    matches!(o.kind, ObstacleKind::Box | ObstacleKind::Base | ObstacleKind::Teleporter).then_some(o.pos.z + o.size.z)
}

/// Tests single cells against the solids.
struct Prober<'a> {
    world: &'a WorldModel,
    tank: TankDims,
    /// Half-length and half-width of the tested rectangle (with the margin).
    rect: (f32, f32),
    footprint: f32,
    headings: [f32; HEADINGS],
    scratch: Vec<ObstacleId>,
}

impl Prober<'_> {
    fn rect(&self, p: Vec2, z: f32, angle: f32) -> TankBox {
        TankBox { pos: p.extend(z), angle, half_length: self.rect.0, half_width: self.rect.1, height: self.tank.height }
    }

    /// The blocked bits of a tank centred at `p`, and the height it stands at.
    fn probe(&mut self, p: Vec2) -> (u8, f32) {
        let square = TankBox {
            pos: p.extend(0.0),
            angle: 0.0,
            half_length: self.footprint,
            half_width: self.footprint,
            height: self.tank.height,
        };
        if self.world.tank_collides(&square).is_none() {
            return (0, 0.0);
        }
        let bump = self.tank.bump;
        let climbable = |id: ObstacleId| flat_top(self.world, id).filter(|&top| top > 1.0e-4 && top < bump);
        let mut climb = 0.0f32;
        for k in 0..HEADINGS {
            let b = self.rect(p, 0.0, self.headings[k]);
            // The first obstacle found settles most cells; only low ones need the whole list.
            match self.world.tank_collides(&b) {
                None => continue,
                Some(id) if climbable(id).is_none() => return (SOLID, 0.0),
                Some(_) => {}
            }
            self.world.tank_collisions(&b, &mut self.scratch);
            for &id in &self.scratch {
                match climbable(id) {
                    Some(top) => climb = climb.max(top),
                    None => return (SOLID, 0.0),
                }
            }
        }
        if climb <= 0.0 {
            return (0, 0.0);
        }
        let g = self.world.ground(p.extend(self.tank.bump));
        if g.height > climb && g.height < self.tank.bump {
            climb = g.height;
        }
        for k in 0..HEADINGS {
            if self.world.tank_collides(&self.rect(p, climb, self.headings[k])).is_some() {
                return (SOLID, climb);
            }
        }
        (RAISED, climb)
    }
}

/// A region to keep the tank's centre out of: within `dist` of a convex polygon (x, y).
struct KeepOut {
    poly: Vec<Vec2>,
    dist: f32,
    bit: u8,
}

/// Distance from `p` to a convex polygon (0 inside); degenerate polygons are their edges.
fn poly_distance(p: Vec2, poly: &[Vec2]) -> f32 {
    let Some(&first) = poly.first() else { return f32::INFINITY };
    if poly.len() == 1 {
        return p.distance(first);
    }
    let (mut pos, mut neg, mut area, mut best) = (0, 0, 0.0f32, f32::INFINITY);
    for (k, &a) in poly.iter().enumerate() {
        let b = poly.get(k + 1).copied().unwrap_or(first);
        let e = b - a;
        let cross = e.perp_dot(p - a);
        if cross > 0.0 {
            pos += 1;
        } else if cross < 0.0 {
            neg += 1;
        }
        area += a.perp_dot(b);
        let len2 = e.length_squared();
        let t = if len2 > 0.0 { ((p - a).dot(e) / len2).clamp(0.0, 1.0) } else { 0.0 };
        best = best.min(p.distance(a + e * t));
    }
    if area.abs() > 1.0e-6 && (pos == 0 || neg == 0) {
        0.0
    } else {
        best
    }
}

impl NavGrid {
    /// Builds the grid for `world` and a tank of `phys`'s size (without flags: an Obese tank needs a grid of its
    /// own), with the default cell for the world's side (`max(side / 400, 1)`).
    pub fn build(world: &WorldModel, phys: &Physics) -> NavGrid {
        NavGrid::with_cell(world, phys, default_cell(world_side(world, phys)))
    }

    /// Builds the grid with cells of side `cell` (raised to `side / 512` so the grid stays within
    /// [`MAX_SIDE_CELLS`]²; a cell that is not a positive number means the default).
    pub fn with_cell(world: &WorldModel, phys: &Physics, cell: f32) -> NavGrid {
        let side = world_side(world, phys);
        let cell = if cell.is_finite() && cell > 0.0 { cell } else { default_cell(side) };
        let cell = cell.max(side / MAX_SIDE_CELLS as f32);
        let n = ((side / cell).ceil() as usize).clamp(1, MAX_SIDE_CELLS);
        let frame = Frame { origin: Vec2::splat(-0.5 * n as f32 * cell), cell, n };
        let tank = TankDims::of(phys);
        let margin = 0.5 * cell;
        let rect = (tank.half_length + margin, tank.half_width + margin);
        let footprint = rect.0.hypot(rect.1);
        let mut cells = vec![0u8; n * n];

        // Outside: the outermost ring (so that every free cell has 8 neighbours) and near the walls.
        let limit = 0.5 * side - footprint;
        for y in 0..n {
            for x in 0..n {
                let c = frame.centre_xy(x, y);
                if x == 0 || y == 0 || x + 1 == n || y + 1 == n || c.x.abs() > limit || c.y.abs() > limit {
                    cells[y * n + x] = OUTSIDE;
                }
            }
        }

        // Solids, block by block: a block whose cells' footprints together touch nothing is free.
        let water = world.water_level.filter(|l| l.is_finite() && *l > 0.0);
        let mut prober = Prober {
            world,
            tank,
            rect,
            footprint,
            headings: std::array::from_fn(|k| k as f32 * PI / HEADINGS as f32),
            scratch: Vec::new(),
        };
        for by in (0..n).step_by(BLOCK) {
            for bx in (0..n).step_by(BLOCK) {
                let (x1, y1) = ((bx + BLOCK).min(n), (by + BLOCK).min(n));
                let all_outside = (by..y1).all(|y| (bx..x1).all(|x| cells[y * n + x] & OUTSIDE != 0));
                if all_outside {
                    continue;
                }
                let (c0, c1) = (frame.centre_xy(bx, by), frame.centre_xy(x1 - 1, y1 - 1));
                let half = (c1 - c0) * 0.5 + Vec2::splat(footprint);
                let block = TankBox {
                    pos: ((c0 + c1) * 0.5).extend(0.0),
                    angle: 0.0,
                    half_length: half.x,
                    half_width: half.y,
                    height: tank.height,
                };
                let clear = world.tank_collides(&block).is_none();
                for y in by..y1 {
                    for x in bx..x1 {
                        let i = y * n + x;
                        if cells[i] & OUTSIDE != 0 {
                            continue;
                        }
                        let (mut bits, z) = if clear { (0, 0.0) } else { prober.probe(frame.centre_xy(x, y)) };
                        if bits & BLOCKED == 0 && water.is_some_and(|l| z <= l) {
                            bits = WATER;
                        }
                        cells[i] |= bits;
                    }
                }
            }
        }

        // Teleporter fields and death drivers near the ground.
        let mut keep = Vec::new();
        for t in &world.teleporters {
            let top = t.pos.z + t.size.z - t.border;
            if t.horizontal || !(t.pos.z <= tank.bump && top >= 0.0) {
                continue;
            }
            let (s, c) = t.angle.sin_cos();
            let (ax, ay) = (Vec2::new(c, s), Vec2::new(-s, c));
            let (w, b) = (t.size.x.abs(), (t.size.y - t.border).abs());
            let o = t.pos.truncate();
            let poly = vec![o - ax * w - ay * b, o + ax * w - ay * b, o + ax * w + ay * b, o - ax * w + ay * b];
            keep.push(KeepOut { poly, dist: tank.half_length + margin, bit: FIELD });
        }
        for f in &world.faces {
            let deadly = f
                .phydrv
                .and_then(|d| world.physics_drivers.get(d as usize))
                .is_some_and(|d| !d.death_message.is_empty());
            if !deadly || f.passable.drive_through || f.plane.normal.z <= 0.0 || f.bounds.min.z > tank.bump {
                continue;
            }
            let poly = world.face_vertices(f).iter().map(|v| v.truncate()).collect();
            keep.push(KeepOut { poly, dist: tank.half_length + margin, bit: DEATH });
        }
        rasterize(&frame, &mut cells, &keep);

        let comp = label(&frame, &cells);
        let rows = Bits::of(n, |line, pos| cells[line * n + pos] & BLOCKED == 0);
        let cols = Bits::of(n, |line, pos| cells[pos * n + line] & BLOCKED == 0);
        NavGrid { frame, cells, comp, rows, cols, footprint }
    }

    /// Side of a cell.
    pub fn cell_size(&self) -> f32 {
        self.frame.cell
    }

    /// Cells along a side (the grid is square, centred on the world's centre).
    pub fn side_cells(&self) -> usize {
        self.frame.n
    }

    /// Radius of the footprint a free cell has room for (the tank's circumscribed radius grown by half a
    /// cell).
    pub fn footprint(&self) -> f32 {
        self.footprint
    }

    /// What the cell containing `p` is ([`CellKind::Outside`] outside the grid or for a point that is not
    /// finite).
    pub fn kind(&self, p: Vec2) -> CellKind {
        self.frame.index(p).and_then(|i| self.cells.get(i)).map_or(CellKind::Outside, |&b| CellKind::of(b))
    }

    fn free_at(&self, i: usize) -> bool {
        self.cells.get(i).is_some_and(|&b| b & BLOCKED == 0)
    }

    /// A tank centred at `p` (any heading) is fine at ground level.
    pub fn is_free(&self, p: Vec2) -> bool {
        self.frame.index(p).is_some_and(|i| self.free_at(i))
    }

    /// `p` itself when it is free, else the centre of the nearest free cell (`p` clamped into the grid first);
    /// `None` for a point that is not finite or a grid without a free cell.
    pub fn nearest_free(&self, p: Vec2) -> Option<Vec2> {
        if self.is_free(p) {
            return Some(p);
        }
        nearest_cell(&self.frame, p, |i| self.free_at(i)).map(|i| self.frame.centre(i))
    }

    /// The connected part of the free cells that `p` (or the nearest free cell, when one is within 3 units) is
    /// in: two points with the same part are joined by a path. [`ANY_PART`] when the grid did not number it
    /// (joined with every part); `None` when no free cell is near.
    pub fn component(&self, p: Vec2) -> Option<u32> {
        let q = self.nearest_free(p).filter(|q| q.distance(p) <= 3.0)?;
        let i = self.frame.index(q)?;
        match self.comp.get(i) {
            Some(0) | None => None,
            Some(&c) => Some(u32::from(c)),
        }
    }

    fn connected(&self, a: usize, b: usize) -> bool {
        match (self.comp.get(a), self.comp.get(b)) {
            (Some(&ca), Some(&cb)) => ca != 0 && cb != 0 && (ca == cb || ca == MANY || cb == MANY),
            _ => false,
        }
    }

    /// A tank can drive straight from `a` to `b`: both are free and every cell the segment touches is free.
    /// (Free cells have room for the whole tank at any heading, so this checks the swept tank, not only its
    /// centre line; see the module documentation.)
    pub fn clear_line(&self, a: Vec2, b: Vec2) -> bool {
        clear_line(self, a, b)
    }

    /// A short path for a tank from `from` to `to`: a shortest 8-connected cell path, pulled taut into clear
    /// straight legs (see the module documentation). A blocked start or goal is snapped to
    /// [`NavGrid::nearest_free`] first: the path then starts at `from`, goes to the snapped start, and ends at
    /// the snapped goal. `None` when the goal cannot be reached or a point is not finite.
    pub fn find_path(&self, from: Vec2, to: Vec2) -> Option<Path> {
        if !from.is_finite() || !to.is_finite() {
            return None;
        }
        let start = self.nearest_free(from)?;
        let goal = self.nearest_free(to)?;
        let (s, g) = (self.frame.index(start)?, self.frame.index(goal)?);
        if !self.connected(s, g) {
            return None;
        }
        let mut points = vec![from];
        if start != from {
            points.push(start);
        }
        if s == g || self.clear_line(start, goal) {
            points.push(goal);
            return Some(Path::new(points));
        }
        // Searched both ways (each breaks the ties between equally short cell paths its own way), the
        // shorter pulled path wins.
        let cells = self.jump_search(s, g)?;
        let mut best = pull_path(self, start, &cells, goal);
        if let Some(mut back) = self.jump_search(g, s) {
            back.reverse();
            let other = pull_path(self, start, &back, goal);
            let len = |w: &[Vec2]| w.windows(2).map(|l| l[0].distance(l[1])).sum::<f32>();
            if len(&other) < len(&best) {
                best = other;
            }
        }
        points.extend(best.into_iter().skip(1));
        Some(Path::new(points))
    }

    /// Jump point search (Harabor and Grastien's A* that skips over the cells of straight runs, in the variant
    /// where a diagonal step needs both side cells free): the cells of a shortest 8-connected path from `s` to
    /// `g`, `s` first.
    fn jump_search(&self, s: usize, g: usize) -> Option<Vec<usize>> {
        const CLOSED: u32 = 1 << 31;
        let f = &self.frame;
        let n = f.n as i32;
        let total = self.cells.len();
        // Cost from the start + 1 (0: not reached), and parent + 1 (| CLOSED once expanded), of the jump
        // points. Zeroed allocations are cheap: only the pages of the cells written are touched.
        let mut cost = vec![0u32; total];
        let mut parent = vec![0u32; total];
        let xy = |i: usize| ((i % f.n) as i32, (i / f.n) as i32);
        let (gx, gy) = xy(g);
        let free = |x: i32, y: i32| x >= 0 && y >= 0 && self.rows.get(y as usize, x as usize);
        let octile = |dx: i32, dy: i32| {
            let (a, b) = (dx.unsigned_abs(), dy.unsigned_abs());
            STRAIGHT * a.max(b) + (DIAGONAL - STRAIGHT) * a.min(b)
        };
        // Along a row or column until the goal, a cell with a forced neighbour (a side cell that only this
        // cell leads to, because the cell behind it is blocked), or a blocked cell: 64 cells at a time.
        let straight = |x: i32, y: i32, dx: i32, dy: i32| -> Option<(i32, i32)> {
            if dy == 0 {
                let goal = (y == gy).then_some(gx as usize);
                self.rows.scan(y as usize, x as usize, dx > 0, goal).map(|x| (x as i32, y))
            } else {
                let goal = (x == gx).then_some(gy as usize);
                self.cols.scan(x as usize, y as usize, dy > 0, goal).map(|y| (x, y as i32))
            }
        };
        // Diagonally until the goal or a cell from which a straight jump finds something.
        let jump = |mut x: i32, mut y: i32, dx: i32, dy: i32| -> Option<(i32, i32)> {
            if dx == 0 || dy == 0 {
                return straight(x, y, dx, dy);
            }
            loop {
                if !(free(x + dx, y) && free(x, y + dy) && free(x + dx, y + dy)) {
                    return None;
                }
                x += dx;
                y += dy;
                if (x, y) == (gx, gy) || straight(x, y, dx, 0).is_some() || straight(x, y, 0, dy).is_some() {
                    return Some((x, y));
                }
            }
        };
        let mut heap = BinaryHeap::with_capacity(256);
        let (sx, sy) = xy(s);
        let hs = octile(sx - gx, sy - gy);
        *cost.get_mut(s)? = 1;
        heap.push(Reverse((hs, hs, s as u32)));
        let mut found = false;
        let mut dirs: Vec<(i32, i32)> = Vec::with_capacity(8);
        while let Some(Reverse((_, _, i))) = heap.pop() {
            let i = i as usize;
            let (Some(&ci), Some(pi)) = (cost.get(i), parent.get_mut(i)) else { continue };
            if *pi & CLOSED != 0 {
                continue;
            }
            *pi |= CLOSED;
            let (gi, pi) = (ci - 1, *pi & !CLOSED);
            if i == g {
                found = true;
                break;
            }
            let (x, y) = xy(i);
            dirs.clear();
            if pi == 0 {
                dirs.extend(DIRS.iter().map(|&(dx, dy)| (i32::from(dx), i32::from(dy))));
            } else {
                let (px, py) = xy(pi as usize - 1);
                let (dx, dy) = ((x - px).signum(), (y - py).signum());
                if dx != 0 && dy != 0 {
                    dirs.extend([(dx, 0), (0, dy), (dx, dy)]);
                } else if dx != 0 {
                    dirs.push((dx, 0));
                    for side in [1, -1] {
                        if !free(x - dx, y + side) {
                            dirs.extend([(0, side), (dx, side)]);
                        }
                    }
                } else {
                    dirs.push((0, dy));
                    for side in [1, -1] {
                        if !free(x + side, y - dy) {
                            dirs.extend([(side, 0), (side, dy)]);
                        }
                    }
                }
            }
            for &(dx, dy) in &dirs {
                let Some((jx, jy)) = jump(x, y, dx, dy) else { continue };
                let j = (jy * n + jx) as usize;
                let ng = gi + octile(jx - x, jy - y);
                let (Some(cj), Some(pj)) = (cost.get_mut(j), parent.get_mut(j)) else { continue };
                if *pj & CLOSED != 0 || (*cj != 0 && ng + 1 >= *cj) {
                    continue;
                }
                *cj = ng + 1;
                *pj = i as u32 + 1;
                let hj = octile(jx - gx, jy - gy);
                heap.push(Reverse((ng + hj, hj, j as u32)));
            }
        }
        if !found {
            return None;
        }
        // The jump points back to the start, then every cell between them.
        let mut jumps = vec![g];
        let mut i = g;
        while i != s && jumps.len() <= total {
            i = (parent.get(i)? & !CLOSED).checked_sub(1)? as usize;
            jumps.push(i);
        }
        jumps.reverse();
        let mut cells = vec![s];
        for w in jumps.windows(2) {
            let ((mut x, mut y), (bx, by)) = (xy(w[0]), xy(w[1]));
            let (dx, dy) = ((bx - x).signum(), (by - y).signum());
            while (x, y) != (bx, by) && cells.len() <= total {
                x += if x != bx { dx } else { 0 };
                y += if y != by { dy } else { 0 };
                cells.push((y * n + x) as usize);
            }
        }
        Some(cells)
    }

    /// The distances to `goal` (snapped to [`NavGrid::nearest_free`]) from every cell that reaches it, to be
    /// shared by every bot going there. An empty field (every distance `None`) when the goal is not finite or
    /// the grid has no free cell.
    pub fn distance_field(&self, goal: Vec2) -> DistanceField {
        let total = self.cells.len();
        let mut field = DistanceField { occ: FreeBits::of(self), goal: None, goal_cell: 0, cost: Vec::new() };
        let Some(goal) = (if goal.is_finite() { self.nearest_free(goal) } else { None }) else { return field };
        let Some(g) = self.frame.index(goal) else { return field };
        field.goal = Some(goal);
        field.goal_cell = g;
        let off = self.frame.offsets();
        let step = [STRAIGHT, STRAIGHT, STRAIGHT, STRAIGHT, DIAGONAL, DIAGONAL, DIAGONAL, DIAGONAL];
        let mut cost = vec![u32::MAX; total];
        // Dijkstra with a bucket queue (Dial): every key of the frontier is within a diagonal step of the
        // smallest one, so a ring of 128 buckets holds them all.
        const NB: usize = 128;
        let mut buckets: Vec<Vec<u32>> = (0..NB).map(|_| Vec::new()).collect();
        cost[g] = 0;
        buckets[0].push(g as u32);
        let mut pending = 1usize;
        let mut cur = 0u32;
        while pending > 0 {
            let b = cur as usize % NB;
            let mut bucket = std::mem::take(&mut buckets[b]);
            pending -= bucket.len();
            for &i in &bucket {
                let i = i as usize;
                if cost[i] != cur {
                    continue; // reached more cheaply since
                }
                let moves = self.moves(i);
                for (d, &o) in off.iter().enumerate() {
                    if moves & (1 << d) == 0 {
                        continue;
                    }
                    let j = i.wrapping_add_signed(o);
                    let c = cur + step[d];
                    if let Some(cj) = cost.get_mut(j) {
                        if c < *cj {
                            *cj = c;
                            buckets[c as usize % NB].push(j as u32);
                            pending += 1;
                        }
                    }
                }
            }
            bucket.clear();
            buckets[b] = bucket;
            cur += 1;
        }
        field.cost = cost;
        field
    }

    /// The moves allowed from free cell `i`: bit `d` for [`DIRS`]`[d]` (diagonals need both side cells free).
    fn moves(&self, i: usize) -> u8 {
        let off = self.frame.offsets();
        let mut free = 0u8;
        for (d, &o) in off.iter().enumerate() {
            if self.free_at(i.wrapping_add_signed(o)) {
                free |= 1 << d;
            }
        }
        // Diagonal 4 = (1, 1) needs 0 and 1; 5 = (-1, 1) needs 2 and 1; 6 = (-1, -1) needs 2 and 3; 7 = (1, -1)
        // needs 0 and 3.
        let sides = u8::from(free & 0b0011 == 0b0011)
            | (u8::from(free & 0b0110 == 0b0110) << 1)
            | (u8::from(free & 0b1100 == 0b1100) << 2)
            | (u8::from(free & 0b1001 == 0b1001) << 3);
        (free & 0x0f) | (free & (sides << 4))
    }

    /// Approximate heap memory held by the grid, in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.cells.capacity()
            + self.comp.capacity() * std::mem::size_of::<u16>()
            + (self.rows.data.capacity() + self.cols.data.capacity()) * std::mem::size_of::<u64>()
    }
}

/// Marks the cells whose centre is in a keep-out region. Each region costs the cells of its bounding box times
/// its corners; past a budget of 32 tests per cell of the grid, regions are marked by their bounding box.
fn rasterize(frame: &Frame, cells: &mut [u8], keep: &[KeepOut]) {
    let n = frame.n;
    let mut budget = 32 * n * n;
    for k in keep {
        let (mut lo, mut hi) = (Vec2::splat(f32::INFINITY), Vec2::splat(f32::NEG_INFINITY));
        for &p in &k.poly {
            lo = lo.min(p);
            hi = hi.max(p);
        }
        if !lo.is_finite() || !hi.is_finite() {
            continue;
        }
        let (g0, g1) = (frame.grid(lo - Vec2::splat(k.dist)), frame.grid(hi + Vec2::splat(k.dist)));
        let top = n as f32 - 1.0;
        if g1.x < 0.0 || g1.y < 0.0 || g0.x > top + 1.0 || g0.y > top + 1.0 {
            continue;
        }
        let (x0, y0) = (g0.x.clamp(0.0, top) as usize, g0.y.clamp(0.0, top) as usize);
        let (x1, y1) = (g1.x.clamp(0.0, top) as usize, g1.y.clamp(0.0, top) as usize);
        let cost = (x1 - x0 + 1) * (y1 - y0 + 1) * k.poly.len().max(1);
        let precise = cost <= budget;
        budget = budget.saturating_sub(cost);
        for y in y0..=y1 {
            for x in x0..=x1 {
                if !precise || poly_distance(frame.centre_xy(x, y), &k.poly) <= k.dist {
                    if let Some(c) = cells.get_mut(y * n + x) {
                        *c |= k.bit;
                    }
                }
            }
        }
    }
}

/// Labels the 4-connected components of the free cells (diagonal steps need both side cells free, so they
/// connect nothing new).
fn label(frame: &Frame, cells: &[u8]) -> Vec<u16> {
    let n = frame.n;
    let mut comp = vec![0u16; cells.len()];
    let mut next = 1u16;
    let mut queue = Vec::new();
    for start in 0..cells.len() {
        if cells[start] & BLOCKED != 0 || comp[start] != 0 {
            continue;
        }
        let id = next;
        if next < MANY {
            next += 1;
        }
        comp[start] = id;
        queue.push(start);
        while let Some(i) = queue.pop() {
            let (x, y) = (i % n, i / n);
            let around = [
                (x + 1 < n).then(|| i + 1),
                (x > 0).then(|| i - 1),
                (y + 1 < n).then(|| i + n),
                (y > 0).then(|| i - n),
            ];
            for j in around.into_iter().flatten() {
                if cells[j] & BLOCKED == 0 && comp[j] == 0 {
                    comp[j] = id;
                    queue.push(j);
                }
            }
        }
    }
    comp
}

/// The cell nearest to `p` (clamped into the grid) that passes `ok`, by distance to its centre.
fn nearest_cell(frame: &Frame, p: Vec2, ok: impl Fn(usize) -> bool) -> Option<usize> {
    if !p.is_finite() {
        return None;
    }
    let p = frame.clamp(p);
    let g = frame.grid(p);
    let n = frame.n as isize;
    let (cx, cy) = ((g.x as isize).clamp(0, n - 1), (g.y as isize).clamp(0, n - 1));
    let mut best: Option<(f32, usize)> = None;
    for r in 0..n {
        if let Some((d2, _)) = best {
            let reach = (r as f32 - 1.0).max(0.0);
            if reach * reach > d2 {
                break;
            }
        }
        let (x0, x1, y0, y1) = (cx - r, cx + r, cy - r, cy + r);
        let mut visit = |x: isize, y: isize| {
            if x < 0 || y < 0 || x >= n || y >= n {
                return;
            }
            let i = (y * n + x) as usize;
            if ok(i) {
                let d2 = (Vec2::new(x as f32 + 0.5, y as f32 + 0.5) - g).length_squared();
                if best.is_none_or(|(b, _)| d2 < b) {
                    best = Some((d2, i));
                }
            }
        };
        if r == 0 {
            visit(cx, cy);
            continue;
        }
        for x in x0..=x1 {
            visit(x, y0);
            visit(x, y1);
        }
        for y in (y0 + 1)..y1 {
            visit(x0, y);
            visit(x1, y);
        }
    }
    best.map(|(_, i)| i)
}

/// Paths to one goal from everywhere ([`NavGrid::distance_field`]): the octile distance of every cell, and a
/// copy of the grid's free cells (a bit each) to pull the descent taut.
#[derive(Clone)]
pub struct DistanceField {
    occ: FreeBits,
    /// The goal (snapped to a free cell).
    goal: Option<Vec2>,
    goal_cell: usize,
    /// Octile cost of each cell (70 per cell side; `u32::MAX` where the goal is not reached).
    cost: Vec<u32>,
}

impl DistanceField {
    /// The goal the field leads to (snapped to a free cell), if any.
    pub fn goal(&self) -> Option<Vec2> {
        self.goal
    }

    fn reached(&self, i: usize) -> bool {
        self.cost.get(i).is_some_and(|&c| c != u32::MAX)
    }

    /// The cell `p` is in if the goal is reached from it; for a blocked point (or one off the grid), the
    /// nearest cell that reaches the goal; `None` for a free point the goal is not reached from.
    fn cell_near(&self, p: Vec2) -> Option<usize> {
        if !p.is_finite() || self.goal.is_none() {
            return None;
        }
        match self.occ.frame.index(p) {
            Some(i) if self.reached(i) => Some(i),
            Some(i) if self.occ.free(i) => None,
            _ => nearest_cell(&self.occ.frame, p, |i| self.reached(i)),
        }
    }

    /// The cells from `i` down to the goal.
    fn descent(&self, i: usize) -> Vec<usize> {
        let f = &self.occ.frame;
        let off = f.offsets();
        let step = [STRAIGHT, STRAIGHT, STRAIGHT, STRAIGHT, DIAGONAL, DIAGONAL, DIAGONAL, DIAGONAL];
        let goal = self.goal.unwrap_or_default();
        let mut cells = vec![i];
        let mut i = i;
        while i != self.goal_cell && cells.len() <= self.cost.len() {
            // Of the neighbours on a shortest path, the one most in the direction of the goal.
            let here = self.cost.get(i).copied().unwrap_or(0);
            let to_goal = (goal - f.centre(i)).normalize_or_zero();
            let mut best: Option<(f32, usize)> = None;
            for (d, &o) in off.iter().enumerate() {
                let j = i.wrapping_add_signed(o);
                let on_path = self.cost.get(j).is_some_and(|&c| c != u32::MAX && c + step[d] == here);
                if !on_path || (d >= 4 && !diagonal_ok(&self.occ, i, d)) {
                    continue;
                }
                let (dx, dy) = DIRS[d];
                let along = Vec2::new(f32::from(dx), f32::from(dy)).normalize().dot(to_goal);
                if best.is_none_or(|(b, _)| along > b) {
                    best = Some((along, j));
                }
            }
            let Some((_, j)) = best else { break };
            i = j;
            cells.push(i);
        }
        cells
    }

    /// The path from `p` to the goal: down the field's descent, pulled taut as [`NavGrid::find_path`] pulls its
    /// paths (from a blocked point, by way of the nearest cell that reaches the goal). `None` when the goal is
    /// not reached from `p` or `p` is not finite.
    pub fn path(&self, p: Vec2) -> Option<Path> {
        let i = self.cell_near(p)?;
        let goal = self.goal?;
        let mut points = vec![p];
        let start = if self.occ.frame.index(p) == Some(i) {
            p
        } else {
            let c = self.occ.frame.centre(i);
            points.push(c);
            c
        };
        let cells = self.descent(i);
        if cells.last() != Some(&self.goal_cell) {
            return None;
        }
        points.extend(pull_path(&self.occ, start, &cells, goal).into_iter().skip(1));
        Some(Path::new(points))
    }

    /// The length of the path from `p` to the goal ([`DistanceField::path`]). It takes a walk down the field
    /// (some tens of microseconds); [`DistanceField::rough_distance`] is immediate.
    pub fn distance(&self, p: Vec2) -> Option<f32> {
        self.path(p).map(|path| path.length)
    }

    /// The octile length of the field's cell path from `p` (from its cell's centre, plus the straight line from
    /// `p` to it): about [`DistanceField::distance`], up to 8 % longer (on diagonals). Immediate.
    pub fn rough_distance(&self, p: Vec2) -> Option<f32> {
        let i = self.cell_near(p)?;
        let goal = self.goal?;
        if i == self.goal_cell {
            return Some(p.distance(goal));
        }
        let c = self.occ.frame.centre(i);
        let cost = *self.cost.get(i)? as f32 / STRAIGHT as f32 * self.occ.frame.cell;
        Some(p.distance(c) + cost)
    }

    /// Where a tank at `from` should drive next: the farthest point along the field's descent that it reaches
    /// in a clear line ([`NavGrid::clear_line`] on `grid`, which should be the grid the field was made from).
    /// From a blocked point near a cell that reaches the goal (a tank that strayed into the margin around an
    /// obstacle), the farthest point in sight of that cell; from a blocked point farther away (a roof), that
    /// cell. `None` when the goal is not reached. Asked again as the tank drives, this steers it along a taut
    /// path: the bends come into sight one after the other.
    pub fn next_waypoint(&self, grid: &NavGrid, from: Vec2) -> Option<Vec2> {
        let i = self.cell_near(from)?;
        let goal = self.goal?;
        let origin = if self.occ.frame.index(from) == Some(i) {
            from
        } else {
            let c = self.occ.frame.centre(i);
            if from.distance(c) > self.occ.frame.cell + PathFollower::REACH {
                return Some(c);
            }
            c
        };
        if i == self.goal_cell {
            return Some(goal);
        }
        let cells = self.descent(i);
        let last = cells.len() - 1;
        let point = |k: usize| {
            if k == last {
                goal
            } else {
                self.occ.frame.centre(cells.get(k).copied().unwrap_or(i))
            }
        };
        let k = farthest_visible(|k| grid.clear_line(origin, point(k)), 0, last);
        Some(point(k))
    }

    /// Approximate heap memory held by the field, in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.cost.capacity() * std::mem::size_of::<u32>() + self.occ.rows.data.capacity() * std::mem::size_of::<u64>()
    }
}

impl fmt::Debug for DistanceField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reached = self.cost.iter().filter(|&&c| c != u32::MAX).count();
        f.debug_struct("DistanceField")
            .field("goal", &self.goal)
            .field("reached_cells", &reached)
            .finish_non_exhaustive()
    }
}

/// Which cells are free: a grid's cells, or the copy a distance field keeps.
trait Occupancy {
    fn frame(&self) -> &Frame;
    fn free(&self, i: usize) -> bool;
}

impl Occupancy for NavGrid {
    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn free(&self, i: usize) -> bool {
        self.free_at(i)
    }
}

/// The free cells of a grid, a bit each (a copy of its rows).
#[derive(Debug, Clone)]
struct FreeBits {
    frame: Frame,
    rows: Bits,
}

impl FreeBits {
    fn of(grid: &NavGrid) -> FreeBits {
        FreeBits { frame: grid.frame, rows: grid.rows.clone() }
    }
}

impl Occupancy for FreeBits {
    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn free(&self, i: usize) -> bool {
        let n = self.frame.n;
        self.rows.get(i / n, i % n)
    }
}

/// An `n × n` bit matrix stored line by line (rows, or columns for the transposed one), each line padded to
/// whole words.
#[derive(Debug, Clone)]
struct Bits {
    n: usize,
    words: usize,
    data: Vec<u64>,
}

impl Bits {
    fn of(n: usize, bit: impl Fn(usize, usize) -> bool) -> Bits {
        let words = n.div_ceil(64);
        let mut data = vec![0u64; n * words];
        for line in 0..n {
            for pos in 0..n {
                if bit(line, pos) {
                    data[line * words + pos / 64] |= 1 << (pos % 64);
                }
            }
        }
        Bits { n, words, data }
    }

    fn get(&self, line: usize, pos: usize) -> bool {
        pos < self.n && self.data.get(line * self.words + pos / 64).is_some_and(|w| (w >> (pos % 64)) & 1 != 0)
    }

    /// Word `k` of line `line` (0 off the matrix).
    fn word(&self, line: usize, k: isize) -> u64 {
        if line >= self.n || k < 0 || k as usize >= self.words {
            return 0;
        }
        self.data.get(line * self.words + k as usize).copied().unwrap_or(0)
    }

    /// From position `pos` of line `line` (excluded), forwards or backwards: the first position that is
    /// `goal` or has a forced neighbour (set on a neighbouring line while the position behind it there is
    /// not), or `None` when a clear bit comes first.
    fn scan(&self, line: usize, pos: usize, forward: bool, goal: Option<usize>) -> Option<usize> {
        let (up, down) = (line + 1, line.wrapping_sub(1));
        let goal_bit = |k: isize| match goal {
            Some(g) if (g / 64) as isize == k => 1u64 << (g % 64),
            _ => 0,
        };
        if forward {
            let start = pos + 1;
            let first = (start / 64) as isize;
            for k in first..self.words as isize {
                let f = self.word(line, k);
                let (u, d) = (self.word(up, k), self.word(down, k));
                let behind_u = (u << 1) | (self.word(up, k - 1) >> 63);
                let behind_d = (d << 1) | (self.word(down, k - 1) >> 63);
                let mut stop = !f | (u & !behind_u) | (d & !behind_d) | goal_bit(k);
                if k == first {
                    stop &= u64::MAX << (start % 64);
                }
                if stop != 0 {
                    let b = k as usize * 64 + stop.trailing_zeros() as usize;
                    return (b < self.n && (f >> (b % 64)) & 1 != 0).then_some(b);
                }
            }
            None
        } else {
            let end = pos.checked_sub(1)?;
            let last = (end / 64) as isize;
            for k in (0..=last).rev() {
                let f = self.word(line, k);
                let (u, d) = (self.word(up, k), self.word(down, k));
                let behind_u = (u >> 1) | (self.word(up, k + 1) << 63);
                let behind_d = (d >> 1) | (self.word(down, k + 1) << 63);
                let mut stop = !f | (u & !behind_u) | (d & !behind_d) | goal_bit(k);
                if k == last {
                    stop &= u64::MAX >> (63 - end % 64);
                }
                if stop != 0 {
                    let b = k as usize * 64 + 63 - stop.leading_zeros() as usize;
                    return ((f >> (b % 64)) & 1 != 0).then_some(b);
                }
            }
            None
        }
    }
}

/// Both ends are free and every cell the segment touches is free (a supercover traversal; at an exact corner
/// crossing, both side cells too).
fn clear_line(o: &impl Occupancy, a: Vec2, b: Vec2) -> bool {
    let f = o.frame();
    let (Some(ia), Some(ib)) = (f.index(a), f.index(b)) else { return false };
    if !o.free(ia) || !o.free(ib) {
        return false;
    }
    let (ga, gb) = (f.grid(a), f.grid(b));
    let (mut x, mut y) = f.xy(ia);
    let (ex, ey) = f.xy(ib);
    let d = gb - ga;
    let (sx, sy) = (if d.x > 0.0 { 1isize } else { -1 }, if d.y > 0.0 { 1isize } else { -1 });
    let (mut nx, mut ny) = (x.abs_diff(ex), y.abs_diff(ey));
    // Parameter (0..1 along the segment) of the next vertical and horizontal cell boundary.
    let (dtx, dty) = (1.0 / d.x.abs(), 1.0 / d.y.abs());
    let mut tx = if sx > 0 { (x as f32 + 1.0 - ga.x) * dtx } else { (ga.x - x as f32) * dtx };
    let mut ty = if sy > 0 { (y as f32 + 1.0 - ga.y) * dty } else { (ga.y - y as f32) * dty };
    let n = f.n;
    let free = |x: usize, y: usize| o.free(y * n + x);
    while nx > 0 || ny > 0 {
        let corner = nx > 0 && ny > 0 && (tx - ty).abs() <= 1.0e-5 * tx.max(ty).max(1.0e-3);
        if corner {
            let (x2, y2) = (x.wrapping_add_signed(sx), y.wrapping_add_signed(sy));
            if !free(x2, y) || !free(x, y2) {
                return false;
            }
            (x, y) = (x2, y2);
            (nx, ny) = (nx - 1, ny - 1);
            tx += dtx;
            ty += dty;
        } else if ny == 0 || (nx > 0 && tx < ty) {
            x = x.wrapping_add_signed(sx);
            nx -= 1;
            tx += dtx;
        } else {
            y = y.wrapping_add_signed(sy);
            ny -= 1;
            ty += dty;
        }
        if !free(x, y) {
            return false;
        }
    }
    true
}

/// The diagonal step `d` (4..8) from cell `i` does not cut a corner: both side cells are free.
fn diagonal_ok(o: &impl Occupancy, i: usize, d: usize) -> bool {
    let Some(&(dx, dy)) = DIRS.get(d) else { return false };
    let n = o.frame().n as isize;
    o.free(i.wrapping_add_signed(isize::from(dx))) && o.free(i.wrapping_add_signed(isize::from(dy) * n))
}

/// Cell `i` is diagonally next to a blocked cell whose two cells beside it (and next to `i`) are free: a
/// convex corner of the blocked region, where a taut string may bend.
fn at_corner(o: &impl Occupancy, i: usize) -> bool {
    let n = o.frame().n as isize;
    DIRS[4..].iter().any(|&(dx, dy)| {
        let (dx, dy) = (isize::from(dx), isize::from(dy) * n);
        !o.free(i.wrapping_add_signed(dx + dy))
            && o.free(i.wrapping_add_signed(dx))
            && o.free(i.wrapping_add_signed(dy))
    })
}

/// From point `a` of a sequence, the farthest later point (up to `last`) that `visible` accepts, found by
/// doubling the step and then halving it (point `a + 1` is taken as visible). Visibility along a path is not
/// quite monotonic, so this is the farthest of the points tried, not always the farthest of all.
fn farthest_visible(visible: impl Fn(usize) -> bool, a: usize, last: usize) -> usize {
    if a >= last {
        return last;
    }
    let mut lo = a + 1;
    let mut hi = None;
    let mut probe = a + 2;
    while probe <= last {
        if visible(probe) {
            lo = probe;
            probe = a + 2 * (probe - a);
        } else {
            hi = Some(probe);
            break;
        }
    }
    let mut hi = match hi {
        Some(h) => h,
        None if lo < last && visible(last) => return last,
        None if lo < last => last,
        None => return lo,
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if visible(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Pulls taut a path given as connected cells (8-neighbours, no corner cut), from `start` (in the first cell)
/// to `goal` (in the last): the waypoints, `start` and `goal` included, every leg a clear line.
///
/// First a greedy pull (from each waypoint to the farthest cell in sight); then the shortest chain through
/// those waypoints and the path's cells at convex corners of the blocked region (where a taut string bends),
/// each leg a clear line: for each candidate, the earlier ones are tried in the order of the length they
/// would give, so the first clear one is the best. The greedy pull alone passes the right bend when the path
/// beyond it stays in sight for a while.
fn pull_path(o: &impl Occupancy, start: Vec2, cells: &[usize], goal: Vec2) -> Vec<Vec2> {
    let f = o.frame();
    let last = cells.len().saturating_sub(1);
    let point = |k: usize| {
        if k == 0 {
            start
        } else if k >= last {
            goal
        } else {
            f.centre(cells.get(k).copied().unwrap_or(0))
        }
    };
    if last == 0 {
        return if start == goal { vec![start] } else { vec![start, goal] };
    }
    // Greedy.
    let mut greedy = vec![0usize];
    let mut a = 0;
    while a < last {
        let pa = point(a);
        a = farthest_visible(|k| clear_line(o, pa, point(k)), a, last);
        greedy.push(a);
    }
    // Candidates: the greedy waypoints (with their rank) and the corner cells, in path order.
    let mut cand: Vec<(usize, Option<usize>)> = Vec::with_capacity(greedy.len() + 16);
    let mut next_greedy = greedy.iter().copied().enumerate().peekable();
    for (k, &cell) in cells.iter().enumerate() {
        if let Some(&(rank, g)) = next_greedy.peek() {
            if g == k {
                cand.push((k, Some(rank)));
                next_greedy.next();
                continue;
            }
        }
        if k > 0 && k < last && at_corner(o, cell) {
            cand.push((k, None));
        }
    }
    if cand.len() > MAX_PULL_CANDIDATES || cand.len() == greedy.len() {
        return greedy.into_iter().map(point).collect();
    }
    let m = cand.len();
    let mut best = vec![f32::INFINITY; m];
    let mut prev = vec![0usize; m];
    best[0] = 0.0;
    let mut order: Vec<(f32, usize)> = Vec::with_capacity(m);
    for j in 1..m {
        let pj = point(cand[j].0);
        order.clear();
        order.extend((0..j).filter(|&i| best[i].is_finite()).map(|i| (best[i] + point(cand[i].0).distance(pj), i)));
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let known = |i: usize| matches!((cand[i].1, cand[j].1), (Some(ri), Some(rj)) if ri + 1 == rj);
        if let Some(&(d, i)) = order.iter().find(|&&(_, i)| known(i) || clear_line(o, point(cand[i].0), pj)) {
            best[j] = d;
            prev[j] = i;
        }
    }
    let mut out = vec![point(cand[m - 1].0)];
    let mut j = m - 1;
    while j > 0 && out.len() <= m {
        j = prev[j];
        out.push(point(cand[j].0));
    }
    out.reverse();
    out
}

/// What the driver should do this tick: fractions as [`crate::bzflag::play::Controls`] takes them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Steer {
    /// Speed, a fraction −0.5..1 of `_tankSpeed` (multiples of 1/4).
    pub speed: f32,
    /// Turn rate, a fraction −1..1 of `_tankAngVel`, positive to the left (counter-clockwise; multiples of
    /// 1/8).
    pub turn: f32,
    /// The last waypoint is reached (speed and turn are 0).
    pub arrived: bool,
}

/// Drives a tank along a [`Path`]: call [`PathFollower::steer`] every tick with the tank's pose.
#[derive(Debug, Clone)]
pub struct PathFollower {
    path: Path,
    next: usize,
    last: Steer,
}

impl PathFollower {
    /// Distance (units) at which a waypoint counts as passed.
    pub const REACH: f32 = 3.0;
    /// Distance (units) at which the last waypoint counts as reached.
    pub const ARRIVE: f32 = 2.0;
    /// Heading error (radians) beyond which the tank turns in place.
    pub const TURN_IN_PLACE: f32 = FRAC_PI_3;
    /// Heading error (radians) from which the tank turns at its full rate.
    pub const FULL_TURN: f32 = 20.0 * PI / 180.0;

    /// Follows `path` from its second waypoint (the first is where it starts).
    pub fn new(path: Path) -> PathFollower {
        let next = usize::from(path.waypoints.len() > 1);
        PathFollower { path, next, last: Steer::default() }
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The waypoint being driven to (`None` once arrived or for an empty path).
    pub fn target(&self) -> Option<Vec2> {
        if self.last.arrived {
            return None;
        }
        self.path.waypoints.get(self.next).copied()
    }

    /// The controls for a tank at `pos` heading `azimuth`.
    pub fn steer(&mut self, pos: Vec3, azimuth: f32, phys: &Physics) -> Steer {
        let stop = Steer { speed: 0.0, turn: 0.0, arrived: false };
        let p = pos.truncate();
        if !p.is_finite() || !azimuth.is_finite() {
            self.last = stop;
            return stop;
        }
        let last = self.path.waypoints.len().saturating_sub(1);
        if self.last.arrived || self.path.waypoints.is_empty() {
            self.last = Steer { arrived: true, ..stop };
            return self.last;
        }
        while self.next < last && self.path.waypoints.get(self.next).is_some_and(|w| w.distance(p) < Self::REACH) {
            self.next += 1;
        }
        let Some(&target) = self.path.waypoints.get(self.next) else { return stop };
        let to = target - p;
        let dist = to.length();
        if self.next == last && (dist < Self::ARRIVE || !dist.is_finite()) {
            self.last = Steer { arrived: true, ..stop };
            return self.last;
        }
        let err = wrap_angle(to.y.atan2(to.x) - azimuth);
        let raw_turn = (err / Self::FULL_TURN).clamp(-1.0, 1.0);
        let raw_speed = if err.abs() > Self::TURN_IN_PLACE {
            0.0
        } else {
            // Slow enough to turn in time: the circle tangent to the heading through the target has radius
            // dist / (2 sin |err|). Slower near the end, and never below a quarter unless turning in place.
            let w = if phys.tank_ang_vel.is_finite() { phys.tank_ang_vel.max(0.0) } else { 0.0 };
            let v = if phys.tank_speed.is_finite() && phys.tank_speed > 0.0 { phys.tank_speed } else { 25.0 };
            let arc = w * dist / (2.0 * err.abs().sin().max(1.0e-3)) / v;
            let lined_up = 1.0 - err.abs() / Self::TURN_IN_PLACE;
            let approach = if self.next == last { 2.0 * dist / v } else { 1.0 };
            if arc < 0.25 {
                0.0
            } else {
                arc.min(lined_up).min(approach).clamp(0.25, 1.0)
            }
        };
        // Quantise, keeping the previous level unless the new value is clearly away from it (slowing down is
        // never delayed).
        let turn =
            if (raw_turn - self.last.turn).abs() <= 0.1 { self.last.turn } else { (raw_turn * 8.0).round() / 8.0 };
        let q = (raw_speed * 4.0).floor() / 4.0;
        let speed =
            if self.last.speed > 0.0 && q > self.last.speed && raw_speed < q + 0.05 { self.last.speed } else { q };
        self.last = Steer { speed, turn, arrived: false };
        self.last
    }
}

#[cfg(test)]
#[path = "nav_tests.rs"]
mod tests;

//! Bots: the helpers bots are made of.
//!
//! * [`nav`]: a path planner for a tank over the world (an occupancy grid at ground level, A*, shared distance
//!   fields).
//! * [`aim`]: firing solutions that lead a moving target along its predicted line or arc, and bank shots.
//! * [`danger`]: which live shots will pass close to us, and how to steer out of their way.

pub mod aim;
pub mod danger;
pub mod nav;

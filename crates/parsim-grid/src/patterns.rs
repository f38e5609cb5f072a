//! Game of Life patterns, as live cells `(row, col)` from their top-left corner.

/// Gosper's glider gun (LifeWiki): period 30, one glider every period.
pub const GOSPER_GUN: [&str; 9] = [
    "........................O...........",
    "......................O.O...........",
    "............OO......OO............OO",
    "...........O...O....OO............OO",
    "OO........O.....O...OO..............",
    "OO........O...O.OO....O.O...........",
    "..........O.....O.......O...........",
    "...........O...O....................",
    "............OO......................",
];

/// A glider travelling towards higher rows and columns (one cell diagonally every 4 steps).
pub const GLIDER: [&str; 3] = [".O.", "..O", "OOO"];

/// The live cells of a pattern drawn with `O` (alive) and `.` (dead).
pub fn cells(pattern: &[&str]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for (r, row) in pattern.iter().enumerate() {
        for (c, ch) in row.bytes().enumerate() {
            if ch == b'O' {
                v.push((r, c));
            }
        }
    }
    v
}

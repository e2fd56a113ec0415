//! Unit tests of exec's operators on hand-made inputs: plans come from SQL
//! over the checked-in tracepoint formats, map values and records are bytes
//! written at the plan's own offsets, and every expected value is exact.

mod groups;
mod joins;
mod rows;

//! Unit tests of exec's operators on hand-made inputs.

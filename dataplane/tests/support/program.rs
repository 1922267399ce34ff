//! Shared by the switch's integration tests that drive it with a program of their own
//! (`receive_burst.rs`, `cut_through.rs`, `emit.rs`, `pfc.rs`; included with `#[macro_use]`).

/// The control side of a test program that takes no commands (`type Command = ()`):
/// `control` answers nothing, `parse_command` refuses every line, and `resources` is the
/// program's `resources` field.
macro_rules! no_commands {
    () => {
        fn control(&mut self, _: (), _: u64) -> Result<String, String> {
            Ok(String::new())
        }

        fn parse_command(_: &str, _: &[String]) -> Result<(), String> {
            Err("this test program takes no commands".into())
        }

        fn resources(&self) -> &Resources {
            &self.resources
        }
    };
}

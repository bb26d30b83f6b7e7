//! Asking before a destructive command.
//!
//! `retire`, `purge` and `parked drop` go ahead with `--yes`. Without it they ask on the
//! terminal (the question on standard error, the answer from standard input, `y` or `yes` to go
//! ahead); where standard input is not a terminal there is nobody to ask, and they refuse
//! before connecting (exit code 2).

use std::io::{BufRead, IsTerminal, Write};

use crate::error::{CliError, Exit};

/// Whoever decides whether a destructive command goes ahead.
pub trait Confirm {
    /// Asks `question`; `Ok(true)` to go ahead.
    ///
    /// # Errors
    ///
    /// When there is nobody to ask, or the answer cannot be read.
    fn confirm(&mut self, question: &str) -> Result<bool, CliError>;
}

/// `--yes`: every question is answered yes.
#[derive(Debug, Clone, Copy)]
pub struct Preconfirmed;

impl Confirm for Preconfirmed {
    fn confirm(&mut self, _question: &str) -> Result<bool, CliError> {
        Ok(true)
    }
}

/// A person at a terminal, or any reader and writer (for tests).
#[derive(Debug)]
pub struct Prompt<R, W> {
    input: R,
    output: W,
}

impl<R: BufRead, W: Write> Prompt<R, W> {
    /// Asks on `output` and reads the answer from `input`.
    pub fn new(input: R, output: W) -> Self {
        Self { input, output }
    }
}

impl<R: BufRead, W: Write> Confirm for Prompt<R, W> {
    fn confirm(&mut self, question: &str) -> Result<bool, CliError> {
        write!(self.output, "{question} [y/N] ")?;
        self.output.flush()?;
        let mut answer = String::new();
        self.input.read_line(&mut answer).map_err(|error| {
            CliError::new(Exit::Failure, format!("cannot read the answer: {error}"))
        })?;
        let answer = answer.trim();
        Ok(answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes"))
    }
}

/// The confirmation for `command`: [`Preconfirmed`] with `--yes`, otherwise a [`Prompt`] on
/// the terminal.
///
/// # Errors
///
/// A usage error (exit code 2) when the command needs a confirmation, `--yes` was not given
/// and standard input is not a terminal.
pub fn for_command(
    command: &str,
    destructive: bool,
    yes: bool,
    stdin_is_terminal: bool,
) -> Result<Box<dyn Confirm>, CliError> {
    if !destructive || yes {
        return Ok(Box::new(Preconfirmed));
    }
    if !stdin_is_terminal {
        return Err(CliError::usage(format!(
            "{command} is destructive and standard input is not a terminal, so nobody can \
             confirm it: add --yes"
        )));
    }
    Ok(Box::new(Prompt::new(
        std::io::stdin().lock(),
        std::io::stderr(),
    )))
}

/// Whether standard input is a terminal.
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> (bool, String) {
        let mut output = Vec::new();
        let confirmed = Prompt::new(text.as_bytes(), &mut output)
            .confirm("Retire it?")
            .unwrap();
        (confirmed, String::from_utf8(output).unwrap())
    }

    #[test]
    fn only_yes_goes_ahead() {
        assert_eq!(answer("y\n"), (true, "Retire it? [y/N] ".to_owned()));
        assert!(answer("YES\n").0);
        assert!(answer(" yes \n").0);
        assert!(!answer("n\n").0);
        assert!(!answer("\n").0);
        assert!(!answer("").0, "end of input is a no");
        assert!(!answer("yess\n").0);
    }

    #[test]
    fn without_a_terminal_a_destructive_command_needs_yes() {
        let refused = for_command("retire", true, false, false).err().unwrap();
        assert_eq!(refused.exit(), Exit::Usage);
        assert!(refused.message().contains("--yes"), "{}", refused.message());
        assert!(for_command("retire", true, true, false).is_ok());
        assert!(for_command("start", false, false, false).is_ok());
    }
}

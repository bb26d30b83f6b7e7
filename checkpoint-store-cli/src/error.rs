//! What the command reports when it stops short: one line on standard error and an exit code.

use std::fmt;
use std::process::ExitCode;

use aws_sdk_dynamodb::types::error::ResourceNotFoundException;
use checkpoint_core::Error;
use checkpoint_core::source::SourceError;

use crate::redact;

/// Why the command stopped, which decides its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The store could not be reached, timed out or failed; or the operator declined at the
    /// prompt. Exit code 1.
    Failure,
    /// The command line was wrong: an unknown option, a malformed URL, an invalid name or
    /// position, or a destructive command without `--yes` where nobody can be asked. Nothing
    /// was changed. Exit code 2.
    Usage,
    /// What is stored does not allow it: nothing to show or to act on (an empty group, an
    /// unknown subscription), a name that exists already, is retired, or is not retired.
    /// Nothing was changed. Exit code 3.
    Refused,
    /// `check` judged at least one partition to need attention (falling behind, stalled or
    /// stopped). Exit code 4.
    Attention,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::Refused => 3,
            Exit::Attention => 4,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}

/// An error of the command: its exit code and its message, one line.
#[derive(Debug)]
pub struct CliError {
    exit: Exit,
    message: String,
}

impl CliError {
    /// An error with exit code `exit` and `message`.
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
        }
    }

    /// A wrong command line (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    /// Refused for what is stored (exit code 3).
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(Exit::Refused, message)
    }

    /// A failure (exit code 1).
    pub fn failure(message: impl Into<String>) -> Self {
        Self::new(Exit::Failure, message)
    }

    /// A store's error, with `context` before it when there is one (`cannot connect to ...`).
    pub fn store(context: Option<&str>, error: &Error) -> Self {
        let exit = match error {
            Error::InvalidInput(_) => Exit::Usage,
            Error::Exists { .. } | Error::Retired { .. } | Error::NotRetired { .. } => {
                Exit::Refused
            }
            _ => Exit::Failure,
        };
        let mut chain = chain(error);
        if let Some(advice) = missing_table(error) {
            chain.push_str(": ");
            chain.push_str(advice);
        }
        let message = match context {
            Some(context) => format!("{context}: {chain}"),
            None => chain,
        };
        Self::new(exit, message)
    }

    /// A log source's error (`status --source`), with `context` before it: a usage error for
    /// input the source refuses (a table or stream name), a failure for anything else (not
    /// reachable, timed out, not set up as the source expects).
    pub fn source(context: &str, error: &SourceError) -> Self {
        let exit = match error {
            SourceError::InvalidInput { .. } => Exit::Usage,
            _ => Exit::Failure,
        };
        Self::new(exit, format!("{context}: {}", chain(error)))
    }

    /// Why the command stopped.
    pub fn exit(&self) -> Exit {
        self.exit
    }

    /// The message, without the `error: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The line to print: `error: ` and the message on one line, any credential removed.
    pub fn line(&self, secrets: &[String]) -> String {
        let one_line = self
            .message
            .split(['\n', '\r'])
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        // `check`'s verdict is its answer, not an error of the command.
        let label = match self.exit {
            Exit::Attention => "attention",
            _ => "error",
        };
        redact::scrub(&format!("{label}: {one_line}"), secrets)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::failure(format!("cannot write the output: {error}"))
    }
}

/// What to do when the store's table does not exist, which a newcomer meets on the first
/// request: the backends only say that a relation or a resource was not found.
const POSTGRES_MISSING_TABLE: &str = "the table does not exist, and the checkpoint command never \
     creates one: create it with the application's store (PostgresCheckpointStore::migrate) or \
     the DDL in the checkpoint-postgres crate doc, or give --table if the application uses \
     another table";
/// As [`POSTGRES_MISSING_TABLE`], for MySQL and MariaDB.
const MYSQL_MISSING_TABLE: &str = "the table does not exist, and the checkpoint command never \
     creates one: create it with the application's store (MysqlCheckpointStore::migrate) or the \
     DDL in the checkpoint-mysql crate doc, or give --table if the application uses another \
     table";
/// As [`MYSQL_MISSING_TABLE`], when a stored procedure `migrate` creates is missing: `groups`
/// (and every lease operation) is a `CALL` of one, so on a database without the tables, or with
/// tables an earlier release made, the procedure is what the server says it cannot find.
const MYSQL_MISSING_PROCEDURE: &str = "the store's stored procedures for this table do not \
     exist (nor, perhaps, the table), and the checkpoint command never creates them: create them \
     with the application's store (MysqlCheckpointStore::migrate, which also creates the \
     procedures of a newer release beside existing tables) or the DDL in the checkpoint-mysql \
     crate doc, or give --table if the application uses another table";
/// MySQL's and MariaDB's `ER_SP_DOES_NOT_EXIST`, whose SQLSTATE (42000) is shared by every
/// syntax and access error.
const MYSQL_NO_SUCH_PROCEDURE: u16 = 1305;
/// As [`POSTGRES_MISSING_TABLE`], for DynamoDB.
const DYNAMODB_MISSING_TABLE: &str = "the table the URL names (dynamodb://TABLE) does not exist \
     in this region at this endpoint, and the checkpoint command never creates one: create it \
     with the application's store (DynamoDbCheckpointStore::create_table) or as the \
     checkpoint-dynamodb crate doc shows";

/// The advice for `error` when it says the store's table does not exist, from the client
/// library's typed error in its source chain: PostgreSQL's SQLSTATE 42P01 (undefined_table),
/// MySQL's 42S02 (`ER_NO_SUCH_TABLE`) or error 1305 (a missing procedure), DynamoDB's
/// `ResourceNotFoundException`.
fn missing_table(error: &Error) -> Option<&'static str> {
    let Error::Backend { backend, .. } = error else {
        return None;
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if *backend == checkpoint_postgres::BACKEND && has_sqlstate(cause, "42P01") {
            return Some(POSTGRES_MISSING_TABLE);
        }
        if *backend == checkpoint_mysql::BACKEND && has_sqlstate(cause, "42S02") {
            return Some(MYSQL_MISSING_TABLE);
        }
        if *backend == checkpoint_mysql::BACKEND && is_mysql_error(cause, MYSQL_NO_SUCH_PROCEDURE) {
            return Some(MYSQL_MISSING_PROCEDURE);
        }
        if *backend == checkpoint_dynamodb::BACKEND && cause.is::<ResourceNotFoundException>() {
            return Some(DYNAMODB_MISSING_TABLE);
        }
        source = cause.source();
    }
    None
}

/// Whether `cause` is sqlx's error of a database that answered with SQLSTATE `sqlstate`.
fn has_sqlstate(cause: &(dyn std::error::Error + 'static), sqlstate: &str) -> bool {
    cause
        .downcast_ref::<sqlx::Error>()
        .and_then(sqlx::Error::as_database_error)
        .and_then(|database| database.code())
        .is_some_and(|code| code == sqlstate)
}

/// Whether `cause` is sqlx's error of a MySQL or MariaDB server that answered with error
/// `number`.
fn is_mysql_error(cause: &(dyn std::error::Error + 'static), number: u16) -> bool {
    cause
        .downcast_ref::<sqlx::Error>()
        .and_then(sqlx::Error::as_database_error)
        .and_then(|database| database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .is_some_and(|mysql| mysql.number() == number)
}

/// The error and its sources, joined with `: `, skipping a source whose text its parent
/// already ends with (client libraries often repeat their source in their own message).
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !cause_text.is_empty() && !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{Argument, InvalidInput, InvalidReason, Operation};

    use super::*;

    #[test]
    fn a_store_error_keeps_its_cause_chain_on_one_line() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused\nby peer");
        let error = Error::backend("postgres", Operation::Connect, true, io);
        let cli = CliError::store(Some("cannot connect to postgres://h/db"), &error);
        assert_eq!(cli.exit(), Exit::Failure);
        assert_eq!(
            cli.line(&[]),
            "error: cannot connect to postgres://h/db: postgres connect failed (may succeed if \
             retried): refused by peer"
        );
    }

    #[test]
    fn exit_codes_follow_the_kind_of_store_error() {
        let invalid: Error = InvalidInput::new(Argument::Group, InvalidReason::Empty).into();
        assert_eq!(CliError::store(None, &invalid).exit().code(), 2);
        assert_eq!(
            CliError::store(None, &Error::exists("g", "s"))
                .exit()
                .code(),
            3
        );
        assert_eq!(
            CliError::store(None, &Error::retired("g", "s"))
                .exit()
                .code(),
            3
        );
        assert_eq!(
            CliError::store(None, &Error::not_retired("g", "s"))
                .exit()
                .code(),
            3
        );
        let timeout = Error::Timeout {
            backend: "redis",
            operation: Operation::List,
            after: std::time::Duration::from_secs(5),
        };
        assert_eq!(CliError::store(None, &timeout).exit().code(), 1);
    }

    #[test]
    fn a_missing_dynamodb_table_says_how_to_create_it() {
        let missing = ResourceNotFoundException::builder()
            .message("Requested resource not found")
            .build();
        let error = Error::backend("dynamodb", Operation::List, false, missing);
        let cli = CliError::store(None, &error);
        assert_eq!(cli.exit(), Exit::Failure);
        assert!(
            cli.message().ends_with(DYNAMODB_MISSING_TABLE),
            "{}",
            cli.message()
        );
        // The same error from another backend is not a DynamoDB table.
        let error = Error::backend("redis", Operation::List, false, std::io::Error::other("x"));
        assert_eq!(missing_table(&error), None);
    }

    #[test]
    fn a_source_error_is_a_usage_error_only_for_refused_input() {
        let invalid = SourceError::InvalidInput {
            argument: "table",
            reason: "\"a-b\" is not an identifier".into(),
        };
        let cli = CliError::source("cannot read the source sqlite:x.db", &invalid);
        assert_eq!(cli.exit(), Exit::Usage);
        assert_eq!(
            cli.message(),
            "cannot read the source sqlite:x.db: invalid table: \"a-b\" is not an identifier"
        );
        let setup = SourceError::Setup {
            backend: "postgres",
            message: "table events does not exist".into(),
        };
        assert_eq!(CliError::source("c", &setup).exit(), Exit::Failure);
    }

    #[test]
    fn a_secret_in_a_message_is_removed() {
        let cli = CliError::failure("cannot reach redis://:hunter2@host:6379");
        let line = cli.line(&["hunter2".to_owned()]);
        assert!(!line.contains("hunter2"), "{line}");
    }
}

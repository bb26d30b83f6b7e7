//! The names a source uses: its table (optionally schema-qualified), the table beside it that
//! keeps the partition count, the notification channel, and the configurable columns.
//!
//! Every name is checked against `[A-Za-z_][A-Za-z0-9_]*` and PostgreSQL's 63-byte identifier
//! limit before it is quoted into SQL, so the statements built from them cannot be injected
//! into (which is why wrapping them in `sqlx::AssertSqlSafe` is sound).

use checkpoint_core::source::SourceError;

/// PostgreSQL's identifier limit (NAMEDATALEN - 1).
const MAX_IDENTIFIER: usize = 63;

/// The suffix of the table that keeps the partition count: `{table}_source`.
pub(crate) const META_SUFFIX: &str = "_source";

/// The suffix of the notification trigger and its function: `{table}_notify`.
pub(crate) const NOTIFY_SUFFIX: &str = "_notify";

/// The suffix of the trigger that refuses a transaction writing more entries to one partition
/// than a position can number, and of its function: `{table}_limit`.
pub(crate) const LIMIT_SUFFIX: &str = "_limit";

/// The suffix of the read index: `{table}_read`.
pub(crate) const INDEX_SUFFIX: &str = "_read";

/// The names of one source's table and columns, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) schema: Option<String>,
    pub(crate) table: String,
    pub(crate) partition_column: String,
    pub(crate) sequence_column: String,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            schema: None,
            table: crate::DEFAULT_TABLE.to_owned(),
            partition_column: crate::DEFAULT_PARTITION_COLUMN.to_owned(),
            sequence_column: crate::DEFAULT_SEQUENCE_COLUMN.to_owned(),
        }
    }
}

impl Layout {
    /// Takes `table` or `schema.table`.
    pub(crate) fn with_table(mut self, name: &str) -> Result<Self, SourceError> {
        let (schema, table) = match name.split_once('.') {
            Some((schema, table)) => (Some(schema), table),
            None => (None, name),
        };
        if let Some(schema) = schema {
            identifier("table", schema, 0)?;
        }
        // The longest suffix must still fit the identifier limit.
        let room = [META_SUFFIX, NOTIFY_SUFFIX, LIMIT_SUFFIX, INDEX_SUFFIX]
            .iter()
            .map(|suffix| suffix.len())
            .max()
            .unwrap_or_default();
        identifier("table", table, room)?;
        self.schema = schema.map(str::to_owned);
        self.table = table.to_owned();
        Ok(self)
    }

    pub(crate) fn with_partition_column(mut self, name: &str) -> Result<Self, SourceError> {
        identifier("partition_column", name, 0)?;
        self.partition_column = name.to_owned();
        Ok(self)
    }

    pub(crate) fn with_sequence_column(mut self, name: &str) -> Result<Self, SourceError> {
        identifier("sequence_column", name, 0)?;
        self.sequence_column = name.to_owned();
        Ok(self)
    }

    /// The table quoted for SQL, for example `"app"."events"`.
    pub(crate) fn quoted(&self) -> String {
        self.beside("")
    }

    /// A name beside the table (`suffix` appended), in its schema, quoted.
    pub(crate) fn beside(&self, suffix: &str) -> String {
        match &self.schema {
            Some(schema) => format!("\"{schema}\".\"{}{suffix}\"", self.table),
            None => format!("\"{}{suffix}\"", self.table),
        }
    }

    /// The table as `to_regclass` and messages take it: `app.events` or `events`.
    pub(crate) fn display(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.table),
            None => self.table.clone(),
        }
    }

    /// The notification channel: the table's name, and its schema's when it has one and the
    /// two fit a channel name (63 bytes; a longer one makes `pg_notify` fail every insert).
    /// Two tables that share a channel only wake each other's readers for nothing.
    pub(crate) fn channel(&self) -> String {
        let qualified = self.display();
        if qualified.len() <= MAX_IDENTIFIER {
            qualified
        } else {
            self.table.clone()
        }
    }
}

fn identifier(argument: &'static str, name: &str, room: usize) -> Result<(), SourceError> {
    let mut chars = name.chars();
    let well_formed = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let limit = MAX_IDENTIFIER - room;
    if !well_formed || name.len() > limit {
        return Err(SourceError::InvalidInput {
            argument,
            reason: format!(
                "{name:?} is not a plain identifier: it must match [A-Za-z_][A-Za-z0-9_]* \
                 and have at most {limit} bytes"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated_and_quoted() {
        let layout = Layout::default().with_table("app.Events").unwrap();
        assert_eq!(layout.quoted(), "\"app\".\"Events\"");
        assert_eq!(layout.beside(META_SUFFIX), "\"app\".\"Events_source\"");
        assert_eq!(layout.channel(), "app.Events");
        for bad in ["", "1events", "ev\"ents", "a.b.c", "a b", &"x".repeat(60)] {
            assert!(Layout::default().with_table(bad).is_err(), "{bad:?}");
        }
        assert!(Layout::default().with_partition_column("p\"").is_err());
        let long = Layout::default()
            .with_table(&format!("{}.{}", "s".repeat(40), "t".repeat(56)))
            .unwrap();
        assert_eq!(
            long.channel(),
            "t".repeat(56),
            "a channel name has at most 63 bytes"
        );
    }
}

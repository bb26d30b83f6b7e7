//! `checkpoint groups`.

use super::{Context, failed};
use crate::error::CliError;
use crate::output::{shown, write_json};

/// Prints every group, one per line (or a JSON array). No group prints nothing and succeeds.
///
/// # Errors
///
/// The store's error.
pub async fn groups(context: Context<'_>, json: bool) -> Result<(), CliError> {
    let groups = context.store.groups().await.map_err(|e| failed(&e))?;
    if json {
        // An array of names.
        write_json(context.out, &groups)?;
    } else {
        for group in &groups {
            writeln!(context.out, "{}", shown(group))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore};

    use super::*;
    use crate::commands::testing::run;

    #[tokio::test]
    async fn every_group_once_sorted_with_retired_only_groups() {
        let store = InMemoryCheckpointStore::new();
        store.save("b", "s", 0, 1).await.unwrap();
        store.save("a", "s", 0, 1).await.unwrap();
        store.save("a", "t", 1, 1).await.unwrap();
        store.retire("c", "gone").await.unwrap();
        let (result, out, _) = run(&store, false, async |c| groups(c, false).await).await;
        result.unwrap();
        assert_eq!(out, "a\nb\nc\n");
        let (result, out, _) = run(&store, false, async |c| groups(c, true).await).await;
        result.unwrap();
        assert_eq!(out, "[\"a\",\"b\",\"c\"]\n");
    }

    #[tokio::test]
    async fn no_group_prints_nothing() {
        let store = InMemoryCheckpointStore::new();
        let (result, out, _) = run(&store, false, async |c| groups(c, false).await).await;
        result.unwrap();
        assert_eq!(out, "");
    }
}

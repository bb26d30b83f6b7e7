//! `append` commits the appends waiting at the same moment together: each still gets its own
//! position, and fails only for its own reason.

use std::collections::BTreeSet;

use checkpoint_core::source::Source;
use tokio::task::JoinSet;

use crate::support::{TempDb, source};

/// Concurrent appends per test.
const APPENDS: usize = 48;

#[tokio::test]
async fn concurrent_appends_each_get_their_own_position_in_order() {
    let db = TempDb::new();
    let source = source(db.path(), 2).await;
    let mut appends = JoinSet::new();
    for n in 0..APPENDS {
        let source = source.clone();
        appends.spawn(async move {
            let payload = format!("entry {n}");
            let position = source.append(1, None, payload.as_bytes()).await;
            (payload, position.expect("an append"))
        });
    }
    let returned = appends.join_all().await;
    let page = source.read(1, 0, APPENDS + 1).await.expect("a read");
    assert_eq!(page.entries.len(), APPENDS);
    // Dense from 1, and each append's position holds its own payload.
    let positions: BTreeSet<u64> = returned.iter().map(|(_, position)| *position).collect();
    assert_eq!(positions, (1..=APPENDS as u64).collect());
    for (payload, position) in returned {
        let entry = &page.entries[usize::try_from(position - 1).unwrap()];
        assert_eq!(
            (entry.position, entry.payload.as_slice()),
            (position, payload.as_bytes())
        );
    }
}

#[tokio::test]
async fn an_append_refused_by_the_database_fails_alone() {
    let db = TempDb::new();
    let source = source(db.path(), 2).await;
    // The application's own rule: a trigger that refuses one payload.
    sqlx::query(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON events WHEN NEW.payload = X'706F69736F6E' \
         BEGIN SELECT RAISE(ABORT, 'poison refused'); END",
    )
    .execute(source.pool())
    .await
    .expect("the trigger");
    let mut appends = JoinSet::new();
    for n in 0..APPENDS {
        let source = source.clone();
        appends.spawn(async move {
            let payload = if n == APPENDS / 2 {
                b"poison".to_vec()
            } else {
                format!("entry {n}").into_bytes()
            };
            (payload.clone(), source.append(0, None, &payload).await)
        });
    }
    let mut appended = 0;
    for (payload, result) in appends.join_all().await {
        if payload == b"poison" {
            let error = result.expect_err("the poison is refused");
            assert!(format!("{error:?}").contains("poison refused"), "{error:?}");
        } else {
            result.expect("every other append commits");
            appended += 1;
        }
    }
    assert_eq!(appended, APPENDS - 1);
    let page = source.read(0, 0, APPENDS + 1).await.expect("a read");
    assert_eq!(page.entries.len(), APPENDS - 1);
    assert!(page.entries.iter().all(|entry| entry.payload != b"poison"));
}

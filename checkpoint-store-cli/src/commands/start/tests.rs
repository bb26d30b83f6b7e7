use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore};

use super::*;
use crate::commands::testing::run;
use crate::error::Exit;

fn from(like: Option<&str>, at: &[&str], partitions: Option<&str>) -> Result<StartFrom, CliError> {
    let at: Vec<String> = at.iter().map(|value| (*value).to_owned()).collect();
    StartFrom::from_args(like, &at, partitions)
}

#[test]
fn the_ways_to_say_where_to_start() {
    assert_eq!(
        from(Some("old"), &[], None).unwrap(),
        StartFrom::Like {
            old: "old".into(),
            at: None,
            overrides: vec![]
        }
    );
    assert_eq!(
        from(Some("old"), &["0",], None).unwrap(),
        StartFrom::Like {
            old: "old".into(),
            at: Some(0),
            overrides: vec![]
        }
    );
    assert_eq!(
        from(Some("old"), &["3=100", "4 = 7"], None).unwrap(),
        StartFrom::Like {
            old: "old".into(),
            at: None,
            overrides: vec![(3, 100), (4, 7)]
        }
    );
    assert_eq!(
        from(None, &["5"], Some("0..4")).unwrap(),
        StartFrom::Partitions {
            partitions: vec![0, 1, 2, 3],
            position: 5
        }
    );
    assert_eq!(
        from(None, &["5"], Some("2..=3")).unwrap(),
        StartFrom::Partitions {
            partitions: vec![2, 3],
            position: 5
        }
    );
    assert_eq!(
        from(None, &["5"], Some("7,1,7")).unwrap(),
        StartFrom::Partitions {
            partitions: vec![1, 7],
            position: 5
        }
    );
    assert_eq!(
        from(None, &["0=1", "9=2"], None).unwrap(),
        StartFrom::Explicit(vec![(0, 1), (9, 2)])
    );
}

#[test]
fn what_does_not_say_where_to_start_is_a_usage_error() {
    for (like, at, partitions) in [
        (None, &[][..], None),
        (None, &["5"][..], None),
        (None, &[][..], Some("0..4")),
        (Some("old"), &["5"][..], Some("0..4")),
        (Some("old"), &["5", "6"][..], None),
        (Some("old"), &["5", "1=2"][..], None),
        (None, &["1=2", "1=3"][..], None),
        (None, &["x"][..], None),
        (None, &["-1"][..], None),
        (None, &["1=x"][..], None),
        (None, &["5"][..], Some("4..4")),
        (None, &["5"][..], Some("0..0")),
        (None, &["5"][..], Some("3..=2")),
        (None, &["5"][..], Some("0..4294967295")),
        (None, &["5"][..], Some("a")),
    ] {
        let error = from(like, at, partitions).unwrap_err();
        assert_eq!(error.exit(), Exit::Usage, "{like:?} {at:?} {partitions:?}");
    }
}

async fn store() -> InMemoryCheckpointStore {
    let store = InMemoryCheckpointStore::new();
    store.save("g", "old", 0, 100).await.unwrap();
    store.save("g", "old", 2, 300).await.unwrap();
    store.save("g", "gone", 0, 1).await.unwrap();
    store.retire("g", "gone").await.unwrap();
    store
}

#[tokio::test]
async fn like_copies_the_positions_with_overrides() {
    let store = store().await;
    let from = from(Some("old"), &["2=250", "5=0"], None).unwrap();
    let (result, out, questions) =
        run(&store, false, async |c| start(c, "g", "new", &from).await).await;
    result.unwrap();
    assert!(questions.is_empty(), "start is not destructive");
    assert_eq!(
        out,
        "started subscription \"new\" of group \"g\" with 3 checkpoints\n\
         SUBSCRIPTION  PARTITION  POSITION\n\
         new                   0       100\n\
         new                   2       250\n\
         new                   5         0\n"
    );
    assert_eq!(store.load("g", "new", 2).await.unwrap(), Some(250));
    assert_eq!(store.load("g", "old", 2).await.unwrap(), Some(300));
}

#[tokio::test]
async fn like_at_replays_every_partition_from_one_position() {
    let store = store().await;
    let from = from(Some("old"), &["0"], None).unwrap();
    let (result, _, _) = run(&store, false, async |c| start(c, "g", "new", &from).await).await;
    result.unwrap();
    assert_eq!(store.load("g", "new", 0).await.unwrap(), Some(0));
    assert_eq!(store.load("g", "new", 2).await.unwrap(), Some(0));
    assert_eq!(store.load("g", "new", 1).await.unwrap(), None);
}

#[tokio::test]
async fn refusals() {
    let store = store().await;
    let like = |old: &str| from(Some(old), &[], None).unwrap();
    let cases = [
        (
            "new",
            like("typo"),
            Exit::Refused,
            "nothing to copy: subscription \"typo\" of group \"g\" has no checkpoints",
        ),
        (
            "new",
            like("gone"),
            Exit::Refused,
            "nothing to copy: subscription \"gone\" of group \"g\" has no checkpoints (it is retired)",
        ),
        (
            "old",
            like("old"),
            Exit::Refused,
            "subscription \"old\" of group \"g\" already has checkpoints",
        ),
        (
            "gone",
            like("old"),
            Exit::Refused,
            "subscription \"gone\" of group \"g\" is retired: purge it before using its name again",
        ),
        (
            "",
            like("old"),
            Exit::Usage,
            "invalid subscription: it is empty",
        ),
        (
            "new",
            StartFrom::Explicit(vec![(0, u64::MAX)]),
            Exit::Usage,
            "invalid position (batch entry 0): 18446744073709551615 is above the highest valid position 9223372036854775807",
        ),
    ];
    for (new, from, exit, message) in cases {
        let (result, out, _) = run(&store, false, async |c| start(c, "g", new, &from).await).await;
        let error = result.unwrap_err();
        assert_eq!((error.exit(), error.message()), (exit, message));
        assert_eq!(out, "");
    }
    assert_eq!(store.load("g", "old", 0).await.unwrap(), Some(100));
}

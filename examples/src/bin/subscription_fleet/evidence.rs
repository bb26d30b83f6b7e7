//! What the children left behind: their files of handled entries (`id pid ms` per line) and the
//! stats each wrote as it exited.

use std::collections::BTreeMap;

use crate::BoxError;
use crate::child::exit_path;
use crate::fleet::Setup;

/// A line of a child's file: the entry's id, the child that handled it, and when (ms since
/// the Unix epoch).
#[derive(Debug, Clone)]
pub struct Handled {
    pub id: u64,
    pub child: String,
    pub at_ms: u64,
}

/// Every line of every child's file. A line that does not parse, or whose pid is not its
/// child's, fails.
pub fn handled(setup: &Setup, started: &BTreeMap<String, u32>) -> Result<Vec<Handled>, BoxError> {
    let mut all = Vec::new();
    for (child, pid) in started {
        let path = setup.handled(child);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // A child killed before it handled anything leaves no file.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error.into()),
        };
        for line in text.lines() {
            let mut fields = line.split(' ').map(str::parse::<u64>);
            let parsed = match (fields.next(), fields.next(), fields.next(), fields.next()) {
                (Some(Ok(id)), Some(Ok(p)), Some(Ok(at_ms)), None) => Some((id, p, at_ms)),
                _ => None,
            };
            match parsed {
                Some((id, p, at_ms)) if p == u64::from(*pid) => all.push(Handled {
                    id,
                    child: child.clone(),
                    at_ms,
                }),
                _ => return Err(format!("{}: bad line {line:?}", path.display()).into()),
            }
        }
    }
    Ok(all)
}

/// The stats of every child that exited gracefully (key=value lines), by child.
pub fn exits(
    setup: &Setup,
    started: &BTreeMap<String, u32>,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    started
        .keys()
        .filter_map(|child| {
            let text = std::fs::read_to_string(exit_path(&setup.handled(child))).ok()?;
            let stats = text
                .lines()
                .filter_map(|line| {
                    let (key, value) = line.split_once('=')?;
                    Some((key.to_owned(), value.parse().ok()?))
                })
                .collect();
            Some((child.clone(), stats))
        })
        .collect()
}

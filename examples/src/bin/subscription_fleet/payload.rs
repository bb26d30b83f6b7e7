//! What each entry carries: a unique id, and whether the handler must fail on it (poison).

/// One entry in 200 is poison: the handler fails on it every time.
const POISON_EVERY: u64 = 200;

/// Whether the entry with `id` is poison (ids are dense, so exactly one in 200).
pub fn is_poison(id: u64) -> bool {
    id % POISON_EVERY == POISON_EVERY - 1
}

/// The payload of entry `id`: `id=<id>`, and ` poison` after it for a poison one.
pub fn encode(id: u64) -> Vec<u8> {
    let poison = if is_poison(id) { " poison" } else { "" };
    format!("id={id}{poison}").into_bytes()
}

/// The id of a payload and whether it is poison; `None` for a payload of no writer of ours.
pub fn decode(payload: &[u8]) -> Option<(u64, bool)> {
    let text = std::str::from_utf8(payload).ok()?.strip_prefix("id=")?;
    match text.split_once(' ') {
        Some((id, "poison")) => Some((id.parse().ok()?, true)),
        None => Some((text.parse().ok()?, false)),
        Some(_) => None,
    }
}

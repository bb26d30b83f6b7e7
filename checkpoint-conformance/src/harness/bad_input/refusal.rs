//! The refusal the contract asks of each call: which argument, which batch entry, or a `to`
//! not ahead of `from`.

use checkpoint_core::Argument;

use super::calls::Call;
use crate::inputs::{first_invalid, valid_name};

/// How a call must be refused.
#[derive(Debug, Clone, Copy)]
pub(super) struct Refusal {
    pub argument: Argument,
    /// The index of the first invalid entry, for a batch refused for an entry.
    pub batch_index: Option<usize>,
    /// Refused because `to` is not ahead of `from`.
    pub not_ahead: bool,
}

impl Refusal {
    fn of(argument: Option<Argument>) -> Option<Refusal> {
        argument.map(|argument| Refusal {
            argument,
            batch_index: None,
            not_ahead: false,
        })
    }
}

/// The refusal the contract asks of `call`, or `None` when it is valid.
pub(super) fn refusal(call: &Call<'_>) -> Option<Refusal> {
    match *call {
        Call::Load {
            group,
            subscription,
            ..
        } => Refusal::of(first_invalid(group, Some(subscription), &[])),
        Call::List { group } => Refusal::of(first_invalid(group, None, &[])),
        Call::Save {
            group,
            subscription,
            position,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::Position, position)],
        )),
        Call::SaveAll { group, checkpoints } => {
            if !valid_name(group) {
                return Refusal::of(Some(Argument::Group));
            }
            checkpoints.iter().enumerate().find_map(|(index, c)| {
                first_invalid(
                    group,
                    Some(&c.subscription),
                    &[(Argument::Position, c.position)],
                )
                .map(|argument| Refusal {
                    argument,
                    batch_index: Some(index),
                    not_ahead: false,
                })
            })
        }
        Call::Claim {
            group,
            subscription,
            initial_position,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::InitialPosition, initial_position)],
        )),
        Call::Advance {
            group,
            subscription,
            from,
            to,
            ..
        } => Refusal::of(first_invalid(
            group,
            Some(subscription),
            &[(Argument::From, from), (Argument::To, to)],
        ))
        .or((to <= from).then_some(Refusal {
            argument: Argument::To,
            batch_index: None,
            not_ahead: true,
        })),
    }
}

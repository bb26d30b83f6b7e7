//! A client that never hands the store the items an `UpdateItem` reply may carry: neither the
//! item after the update (`ReturnValues`, which `claim` asks for) nor the old item of a failed
//! condition (`ReturnValuesOnConditionCheckFailure`, which `advance` asks for).
//!
//! A server may leave them out (dynalite never sends the old item of a failed condition), and a
//! store must keep every promise without them: `claim` still returns the stored position, and
//! `Error::Moved` never reports an existing checkpoint as absent. This interceptor takes them
//! out of the parsed reply, on any server, so that both fallbacks run everywhere.

use aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};

/// The interceptor: add it to a client's configuration with `.interceptor(WithoutReturnedItems)`.
#[derive(Debug)]
pub struct WithoutReturnedItems;

impl Intercept for WithoutReturnedItems {
    fn name(&self) -> &'static str {
        "WithoutReturnedItems"
    }

    fn modify_before_completion(
        &self,
        context: &mut FinalizerInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let context = context.inner_mut();
        match context.take_output_or_error() {
            Some(Ok(mut output)) => {
                if let Some(update) = output.downcast_mut::<UpdateItemOutput>() {
                    update.attributes = None;
                }
                context.set_output_or_error(Ok(output));
            }
            Some(Err(error)) => {
                let error = error.map_operation_error(|mut error| {
                    if let Some(UpdateItemError::ConditionalCheckFailedException(failed)) =
                        error.downcast_mut::<UpdateItemError>()
                    {
                        failed.item = None;
                    }
                    error
                });
                context.set_output_or_error(Err(error));
            }
            None => {}
        }
        Ok(())
    }
}

//! Opening the store a [`StoreUrl`] names, through each backend crate's own constructors.

use crate::error::ConnectError;
use crate::options::Options;
use crate::store::Store;
use crate::store_url::StoreUrl;

/// Opens the store `url` names, with `options`, within `options.timeout`.
///
/// # Errors
///
/// [`ConnectError::NotBuilt`] naming the feature to add; [`ConnectError::Setting`] for a table
/// or key prefix the backend does not have; [`ConnectError::Timeout`]; the store's own error
/// (which never holds the URL) when it cannot be opened or a setting's value is invalid.
pub async fn open(url: &StoreUrl, options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    if let Some(feature) = url.missing_feature() {
        return Err(ConnectError::NotBuilt {
            scheme: url.scheme(),
            feature,
        });
    }
    options.check_for(url)?;
    // Boxed: the backends' connect futures nest deep, and a caller's own future holding them
    // inline reaches the compiler's layout depth limit (seen in the examples' `main`).
    let opening = Box::pin(crate::backends::open(url, options));
    match tokio::time::timeout(options.timeout, opening).await {
        Ok(opened) => opened,
        Err(_) => Err(ConnectError::Timeout(options.timeout)),
    }
}

/// Opens the store `url` names (see the crate doc) with the default [`Options`].
///
/// # Errors
///
/// [`UrlError`](crate::UrlError) as a [`ConnectError::Url`] when `url` names no store, and
/// what [`open`] returns.
pub async fn connect(url: &str) -> Result<Box<dyn Store>, ConnectError> {
    let url: StoreUrl = url.parse()?;
    open(&url, &Options::default()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_backend_left_out_names_its_feature() {
        for (url, feature, built) in [
            (
                "postgres://u:hunter2@h/db",
                "postgres",
                cfg!(feature = "postgres"),
            ),
            ("mysql://u:hunter2@h/db", "mysql", cfg!(feature = "mysql")),
            ("mariadb://u:hunter2@h/db", "mysql", cfg!(feature = "mysql")),
            ("redis://:hunter2@h", "redis", cfg!(feature = "redis")),
            ("dynamodb://t", "dynamodb", cfg!(feature = "dynamodb")),
            (
                "sqlite:/nonexistent/x.db",
                "sqlite",
                cfg!(feature = "sqlite"),
            ),
        ] {
            if built {
                continue;
            }
            let url: StoreUrl = url.parse().unwrap();
            let error = open(&url, &Options::default()).await.unwrap_err();
            assert!(
                matches!(error, ConnectError::NotBuilt { feature: f, .. } if f == feature),
                "{error:?}"
            );
            assert!(!error.to_string().contains("hunter2"), "{error}");
        }
    }
}

//! Prints the `CustomResourceDefinition` of [`Database`] as JSON, for `kubectl apply -f -`
//! (`cargo xtask codegen` checks it into `crds/databases.example.com.json`).

use example_derive::Database;

fn main() {
    match serde_json::to_string_pretty(&Database::crd()) {
        Ok(json) => println!("{json}"),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}

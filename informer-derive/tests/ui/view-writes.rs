use informer_derive::Informer;
use informer_client::Client;
use informer_runtime::PartialObjectMetadata;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Pod)]
pub struct PodView {
    metadata: ObjectMeta,
}

// A view lacks fields: creating or replacing a pod with it would erase them on the server.
async fn write(client: Client, view: PodView, meta: PartialObjectMetadata<Pod>) {
    let _ = client.create(Some("default"), &view).await;
    let _ = client.replace(Some("default"), "web-0", &view).await;
    let _ = client.replace(Some("default"), "web-0", &meta).await;
    // Reads, merge patches and deletes are fine.
    let _ = client.get::<PodView>(Some("default"), "web-0").await;
    let _ = client.patch_merge::<PodView>(Some("default"), "web-0", &serde_json::json!({})).await;
    let _ = client.delete::<PodView>(Some("default"), "web-0").await;
}

// Nor does it have a CRD: the viewed type's resource is the one on the server.
fn crd() {
    let _ = PodView::crd();
}

fn main() {
    let _ = (write, crd);
}

# Models restored by readRDS(). A model's weights live in the C++ core behind
# an external pointer, which R serialises as a null address: a model saved
# with saveRDS() comes back as its R description without its core. Every use
# of the core goes through `model$ptr()`, which checks here and raises a
# classed error pointing to save_model()/load_model() (instead of Rcpp's
# "external pointer is not valid", or a crash).

# TRUE for an external pointer whose address is null (a serialised one).
# identical() compares external pointers by address, and a serialised copy
# of any external pointer has a null address.
is_null_pointer <- function(p) {
  typeof(p) == "externalptr" && identical(p, unserialize(serialize(p, NULL)))
}

abort_restored_model <- function(name, call = user_call()) {
  abort_kind("serialization",
             c("Model {.val {name}} was restored by {.fn readRDS} (or {.fn load}): its weights live in the C++ core, which R does not serialise.",
               i = "Save models with {.fn save_model} and restore them with {.fn load_model} (the Keras 3 {.file .keras} format)."),
             call = call)
}

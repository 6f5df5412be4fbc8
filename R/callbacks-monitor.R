# Helpers shared by the callbacks that monitor a metric (early stopping,
# learning-rate reduction on plateau).

# Direction of a metric for mode = "auto", following the `_direction` of the
# Keras metric classes: "up" for accuracy-like scores, "down" for losses and
# errors. NULL when the name is not recognised.
metric_direction <- function(monitor) {
  name <- sub("^val_", "", monitor)
  if (identical(name, "loss")) return("down")
  up <- "acc|auc|precision|recall|iou|f1_score|fbeta_score|r2_score|cosine_similarity|true_positives|true_negatives"
  down <- "loss|error|crossentropy|hinge|divergence|poisson|logcosh|false_positives|false_negatives"
  if (grepl(up, name)) return("up")
  if (grepl(down, name)) return("down")
  NULL
}

monitor_value <- function(logs, monitor) {
  v <- logs[[monitor]]
  if (is.null(v)) return(NULL)
  as.numeric(v)[[1]]
}

warn_missing_monitor <- function(what, monitor, logs, suffix = "") {
  available <- paste(names(logs), collapse = ",")
  cli::cli_warn(
    paste0(what, " conditioned on metric {.code {monitor}} which is not available. ",
           "Available metrics are: {available}", suffix),
    class = "mirrored_callback_warning"
  )
}

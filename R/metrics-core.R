# What the core takes for a metric (src/r_model.cpp, metric_config()): every
# parameter of mr::MetricConfig by name, Keras' defaults where the metric
# object does not set one. `weighted`: an entry of compile()'s
# weighted_metrics (its state is weighted by the sample weights).
metric_core_spec <- function(m, weighted = FALSE) {
  p <- m$params %||% list()
  get <- function(key, default) if (is.null(p[[key]])) default else p[[key]]
  list(kind = m$kind, name = m$log_name %||% m$name, weighted = weighted,
       threshold = as.numeric(m$threshold %||% get("threshold", 0.5)),
       k = as.numeric(get("k", 5)), top_k = as.numeric(get("top_k", 0)),
       class_id = as.numeric(get("class_id", -1)),
       num_thresholds = as.numeric(get("num_thresholds", 200)),
       curve = get("curve", "ROC"), summation_method = get("summation_method", "interpolation"),
       average = get("average", "none"), beta = as.numeric(get("beta", 1)),
       num_classes = as.numeric(get("num_classes", 0)),
       ignore_class = as.numeric(get("ignore_class", -1)),
       sparse_y_true = isTRUE(get("sparse_y_true", TRUE)),
       sparse_y_pred = isTRUE(get("sparse_y_pred", TRUE)),
       from_logits = isTRUE(get("from_logits", FALSE)),
       label_smoothing = as.numeric(get("label_smoothing", 0)))
}

# The metric of a Keras config (a .keras file's compile_config) for the
# classes of R/metrics-means.R and R/metrics-confusion.R; NULL for others.
metric_from_keras_config <- function(cls, cfg, name) {
  g <- function(key, default = NULL) if (key %in% names(cfg)) cfg[[key]] else default
  num <- function(x) if (is.list(x)) unlist(x) else x
  switch(cls,
    MeanSquaredError = metric_mean_squared_error(name = name),
    RootMeanSquaredError = metric_root_mean_squared_error(name = name),
    MeanAbsolutePercentageError = metric_mean_absolute_percentage_error(name = name),
    TopKCategoricalAccuracy = metric_top_k_categorical_accuracy(k = g("k", 5L), name = name),
    SparseTopKCategoricalAccuracy = metric_sparse_top_k_categorical_accuracy(
      k = g("k", 5L), name = name, from_sorted_ids = g("from_sorted_ids", FALSE)),
    BinaryCrossentropy = metric_binary_crossentropy(from_logits = g("from_logits", FALSE),
                                                    label_smoothing = g("label_smoothing", 0), name = name),
    CategoricalCrossentropy = metric_categorical_crossentropy(from_logits = g("from_logits", FALSE),
                                                              label_smoothing = g("label_smoothing", 0),
                                                              axis = g("axis", -1L), name = name),
    SparseCategoricalCrossentropy = metric_sparse_categorical_crossentropy(
      from_logits = g("from_logits", FALSE), ignore_class = g("ignore_class"), axis = g("axis", -1L),
      name = name),
    AUC = metric_auc(num_thresholds = g("num_thresholds", 200L), curve = g("curve", "ROC"),
                     summation_method = g("summation_method", "interpolation"), name = name,
                     thresholds = num(g("thresholds")), multi_label = g("multi_label", FALSE),
                     num_labels = g("num_labels"), label_weights = num(g("label_weights")),
                     from_logits = g("from_logits", FALSE)),
    Precision = metric_precision(thresholds = num(g("thresholds")), top_k = g("top_k"),
                                 class_id = g("class_id"), name = name),
    Recall = metric_recall(thresholds = num(g("thresholds")), top_k = g("top_k"), class_id = g("class_id"),
                           name = name),
    TruePositives = metric_true_positives(thresholds = num(g("thresholds")), name = name),
    FalsePositives = metric_false_positives(thresholds = num(g("thresholds")), name = name),
    TrueNegatives = metric_true_negatives(thresholds = num(g("thresholds")), name = name),
    FalseNegatives = metric_false_negatives(thresholds = num(g("thresholds")), name = name),
    F1Score = metric_f1_score(average = g("average"), threshold = g("threshold"), name = name),
    FBetaScore = metric_fbeta_score(average = g("average"), beta = g("beta", 1), threshold = g("threshold"),
                                    name = name),
    MeanIoU = metric_mean_iou(num_classes = g("num_classes"), name = name, ignore_class = g("ignore_class"),
                              sparse_y_true = g("sparse_y_true", TRUE), sparse_y_pred = g("sparse_y_pred", TRUE),
                              axis = g("axis", -1L)),
    NULL
  )
}

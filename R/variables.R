# Variables as keras3 shows them: `model$weights`, `layer$weights` and
# their trainable / non-trainable parts are lists of variable objects
# (Keras' KerasVariable: path, name, shape, dtype, trainable, value), not
# of arrays; `get_weights()` gives the arrays. A variable is a view of one
# weight of the model that holds it: its value is read from the core when
# asked for (`v$numpy()`, `as.array(v)`, arithmetic) and `v$assign()` sets
# it on every replica, so it never goes stale as the model trains.

KerasVariable <- R6::R6Class("mirrored_variable",
  cloneable = FALSE,
  public = list(
    path = NULL,
    name = NULL,
    shape = NULL,
    dtype = "float32",
    trainable = TRUE,
    initialize = function(model, index, path, name, shape, trainable) {
      private$model <- model
      private$index <- index
      self$path <- path
      self$name <- name
      self$shape <- shape
      self$trainable <- trainable
    },
    numpy = function() private$model$get_weights()[[private$index]],
    assign = function(value) {
      w <- private$model$get_weights()
      old <- w[[private$index]]
      if (!(is.numeric(value) || is.logical(value)) || length(value) != length(old)) {
        abort_value("A value assigned to variable {.val {self$path}} must be {length(old)} number{?s} (shape {format(shape(self$shape))}), not {describe(value)}.",
                    call = NULL)
      }
      w[[private$index]] <- if (is.null(dim(old))) as.double(value) else array(as.double(value), dim(old))
      private$model$set_weights(w)
      invisible(self)
    },
    assign_add = function(value) self$assign(self$numpy() + as.double(value)),
    assign_sub = function(value) self$assign(self$numpy() - as.double(value)),
    print = function(...) {
      cat("<Variable path=", self$path, ", shape=", format(shape(self$shape)), ", dtype=", self$dtype,
          ", trainable=", self$trainable, ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(value = function() self$numpy()),
  private = list(model = NULL, index = NULL)
)

#' @export
as.array.mirrored_variable <- function(x, ...) as.array(x$numpy())

#' @export
as.double.mirrored_variable <- function(x, ...) as.double(x$numpy())

#' @export
dim.mirrored_variable <- function(x) if (length(x$shape) > 1) as.integer(x$shape) else NULL

#' @export
Ops.mirrored_variable <- function(e1, e2) {
  v <- function(x) if (inherits(x, "mirrored_variable")) x$numpy() else x
  if (missing(e2)) return(get(.Generic)(v(e1)))
  get(.Generic)(v(e1), v(e2))
}

#' @export
Math.mirrored_variable <- function(x, ...) get(.Generic)(x$numpy(), ...)

# The variables of `model` at weight indices `which` (all by default), in
# Keras' order, each with its path "<layer>/<weight>" and trainable flag.
model_variables <- function(model, which = NULL) {
  model <- model_object(model)
  own <- with_core(cpp_model_weight_owners(model$ptr()))
  trainable <- model_weight_trainable(model)
  g <- model$graph()
  values <- model$get_weights()
  idx <- if (is.null(which)) seq_along(own$name) else which
  lapply(idx, function(k) {
    layer <- g$nodes[[own$node[[k]] + 1L]]$layer
    dims <- dim(values[[k]]) %||% length(values[[k]])
    KerasVariable$new(model, k, paste0(layer$name, "/", own$name[[k]]), own$name[[k]], as.integer(dims),
                      isTRUE(trainable[[k]]))
  })
}

# A layer's variables in the model that holds it; `part`: "all",
# "trainable" or "non_trainable".
layer_variables <- function(layer, part = "all") {
  model <- layer_host_model(layer)
  if (is.null(model)) return(list())
  idx <- layer_weight_index(model, layer)
  vars <- model_variables(model, idx$index)
  trainable <- idx$trainable & isTRUE(layer$trainable)
  switch(part, all = vars, trainable = vars[trainable], non_trainable = vars[!trainable])
}

// The optim umbrella header: every optimizer and LR scheduler (like <torch/optim.h>).
#pragma once
#include "retorch/optim/Adagrad.h"
#include "retorch/optim/Adam.h"
#include "retorch/optim/AdamW.h"
#include "retorch/optim/LRScheduler.h"
#include "retorch/optim/OneCycleLR.h"
#include "retorch/optim/Optimizer.h"
#include "retorch/optim/RMSprop.h"
#include "retorch/optim/ReduceLROnPlateau.h"
#include "retorch/optim/SGD.h"

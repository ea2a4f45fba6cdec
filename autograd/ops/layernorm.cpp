#include "autograd/ops.h"

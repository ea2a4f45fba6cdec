#include "autograd/broadcast.h"

namespace qdq {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
    size_t n = std::max(a.size(), b.size());
    Shape out(n);
    for (size_t i = 0; i < n; ++i) {
        int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        check(da == db || da == 1 || db == 1,
              "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

BroadcastMap::BroadcastMap(const Shape& in_shape, const Shape& out) : out_shape(out) {
    check(in_shape.size() <= out.size(), "cannot broadcast " + shape_str(in_shape) + " to " +
                                             shape_str(out));
    size_t lead = out.size() - in_shape.size();
    in_strides.assign(out.size(), 0);
    int64_t stride = 1;
    for (size_t i = out.size(); i-- > lead;) {
        int64_t d = in_shape[i - lead];
        check(d == out[i] || d == 1, "cannot broadcast " + shape_str(in_shape) + " to " +
                                         shape_str(out));
        in_strides[i] = d == 1 ? 0 : stride;
        stride *= d;
    }
}

int64_t BroadcastMap::offset(int64_t index) const {
    int64_t off = 0;
    for (size_t i = out_shape.size(); i-- > 0;) {
        off += (index % out_shape[i]) * in_strides[i];
        index /= out_shape[i];
    }
    return off;
}

void BroadcastMap::offsets(int64_t begin, int64_t end, int64_t* out) const {
    size_t n = out_shape.size();
    if (begin >= end) return;
    std::vector<int64_t> idx(n);
    int64_t rest = begin;
    for (size_t i = n; i-- > 0;) {
        idx[i] = rest % out_shape[i];
        rest /= out_shape[i];
    }
    int64_t off = offset(begin);
    for (int64_t k = begin; k < end; ++k) {
        out[k - begin] = off;
        for (size_t i = n; i-- > 0;) {
            off += in_strides[i];
            if (++idx[i] < out_shape[i]) break;
            off -= in_strides[i] * out_shape[i];
            idx[i] = 0;
        }
    }
}

void reduce_broadcast_add(const Tensor& dst, const Tensor& grad) {
    BroadcastMap map(dst.shape(), grad.shape());
    int64_t n = grad.numel();
    std::vector<int64_t> offs((size_t)n);
    map.offsets(0, n, offs.data());
    float* d = dst.f32();
    const float* g = grad.f32();
    for (int64_t i = 0; i < n; ++i) d[offs[(size_t)i]] += g[i];
}

}  // namespace qdq

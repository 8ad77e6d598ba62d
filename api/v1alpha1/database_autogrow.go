/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults of spec.storage.autoGrow, for objects the API server did not
// default (tests, older stored objects).
const (
	DefaultAutoGrowThresholdPercent = 80
	DefaultAutoGrowIncrementPercent = 20
)

// AnnotationGrownFromCapacity on a data volume claim is the capacity, in
// bytes, that its instance last reported when Steward asked the claim to
// grow. A report of that capacity or less was read before the file system
// grew (instances report every few seconds, and the claim says it grew
// before they next do): deciding on it would grow the volume again for
// usage it no longer has (ReportPredatesGrowth).
const AnnotationGrownFromCapacity = "steward.dev/grown-from-capacity-bytes"

// ReportPredatesGrowth reports whether an instance's volume capacity,
// reported as reportedBytes, was read before its claim last grew;
// grownFrom is the claim's AnnotationGrownFromCapacity, empty when the
// claim never grew.
func ReportPredatesGrowth(reportedBytes int64, grownFrom string) bool {
	from, err := strconv.ParseInt(grownFrom, 10, 64)
	return err == nil && reportedBytes <= from
}

// growthGranularity is what a grown size is rounded up to.
const growthGranularity = 1 << 20

// VolumeUsage is one instance's report of its data volume's file system.
// +kubebuilder:object:generate=false
type VolumeUsage struct {
	// Instance is the instance's pod.
	Instance string
	// UsedBytes and CapacityBytes are the file system's.
	UsedBytes, CapacityBytes int64
}

// UsedPercent is UsedBytes over CapacityBytes, in percent; 0 without a
// capacity.
func (u VolumeUsage) UsedPercent() float64 {
	if u.CapacityBytes <= 0 {
		return 0
	}
	return 100 * float64(u.UsedBytes) / float64(u.CapacityBytes)
}

// StorageGrowth is the decision of GrowDecision.
// +kubebuilder:object:generate=false
type StorageGrowth struct {
	// Grow is true when the volumes must grow to Next.
	Grow bool
	// Next is the size to grow to when Grow; otherwise the current size.
	Next resource.Quantity
	// Blocked is true when a volume is over the threshold and cannot grow.
	Blocked bool
	// Reason is one of ReasonGrowing, ReasonBelowThreshold,
	// ReasonMaximumReached, ReasonStorageClassCannotExpand and
	// ReasonNoUsageReported; Message says it in words.
	Reason, Message string
}

// Threshold is ThresholdPercent, or its default when unset.
func (a *DatabaseAutoGrow) Threshold() int32 {
	if a.ThresholdPercent <= 0 {
		return DefaultAutoGrowThresholdPercent
	}
	return a.ThresholdPercent
}

// Increment is IncrementPercent, or its default when unset.
func (a *DatabaseAutoGrow) Increment() int32 {
	if a.IncrementPercent <= 0 {
		return DefaultAutoGrowIncrementPercent
	}
	return a.IncrementPercent
}

// GrownSize is current grown by the increment, rounded up to a whole MiB,
// and capped at the maximum (never below current).
func (a *DatabaseAutoGrow) GrownSize(current resource.Quantity) resource.Quantity {
	cur := current.Value()
	next := cur + (cur*int64(a.Increment())+99)/100
	next = (next + growthGranularity - 1) / growthGranularity * growthGranularity
	if maxBytes := a.Maximum.Value(); next > maxBytes {
		next = maxBytes
	}
	if next < cur {
		next = cur
	}
	return *resource.NewQuantity(next, resource.BinarySI)
}

// GrowDecision decides whether the volumes, each of size current, grow:
// they do when the fullest instance's volume is used to the threshold or
// more, its storage class can expand (expandable) and current is below
// the maximum. The caller asks only when no earlier growth is still
// pending: a volume that has not grown yet reports its old usage.
func (s DatabaseStorage) GrowDecision(current resource.Quantity, volumes []VolumeUsage, expandable bool) StorageGrowth {
	d := StorageGrowth{Next: current.DeepCopy()}
	a := s.AutoGrow
	if a == nil {
		return d
	}
	var fullest *VolumeUsage
	for i := range volumes {
		if volumes[i].CapacityBytes <= 0 {
			continue
		}
		if fullest == nil || volumes[i].UsedPercent() > fullest.UsedPercent() {
			fullest = &volumes[i]
		}
	}
	if fullest == nil {
		d.Reason, d.Message = ReasonNoUsageReported, "No instance reported its volume's usage yet"
		return d
	}
	used := fullest.UsedPercent()
	if used < float64(a.Threshold()) {
		d.Reason = ReasonBelowThreshold
		d.Message = fmt.Sprintf("The fullest volume, %s's, is %.0f%% used, below the %d%% threshold", fullest.Instance, used, a.Threshold())
		return d
	}
	over := fmt.Sprintf("%s's volume is %.0f%% used (threshold %d%%)", fullest.Instance, used, a.Threshold())
	switch {
	case current.Cmp(a.Maximum) >= 0:
		d.Blocked, d.Reason = true, ReasonMaximumReached
		d.Message = fmt.Sprintf("%s and the volumes are at storage.autoGrow.maximum, %s: raise the maximum or free space", over, a.Maximum.String())
	case !expandable:
		d.Blocked, d.Reason = true, ReasonStorageClassCannotExpand
		d.Message = over + " and the volumes' storage class does not allow volume expansion"
	default:
		d.Grow, d.Reason, d.Next = true, ReasonGrowing, a.GrownSize(current)
		d.Message = fmt.Sprintf("%s: growing every volume from %s to %s", over, current.String(), d.Next.String())
	}
	return d
}
